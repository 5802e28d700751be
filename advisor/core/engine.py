"""A shared engine in a closed loop: slots, batching, and the neighbours' prefills.

Why: the glossary's latency model is per request, but a lever changes every request of the
workload at once, and on a server with continuous batching (vLLM, SGLang, TensorRT-LLM with
chunked prefill) requests share one stream of steps. A step that carries a prompt's prefill is
compute bound and long, and every request decoding in that step waits for it. At concurrency
c, a request's latency therefore holds its own prefill and decode plus the prefills of the
neighbours that arrive while it runs: on the simulator, a shorter prompt at concurrency 2 saves
twice its own prefill, at 8 up to four times, and an output cap saves less than the measured
TPOT says (that TPOT carries the neighbours' prefills, which a shorter answer keeps). Servers
that run prefill apart (disaggregated prefill) or whose slots are independent show none of it.
So how much a neighbour's prefill costs is fitted, not assumed.

The model, for c identical clients that each spend `overhead_ms` O outside the engine:

- *Free slots* (mean-value analysis): a request spends L inside the engine, each client cycles
  every O + L, so while it runs each of the c - 1 neighbours arrives L / (O + L) times and adds
  `interference` x its prefill:
      L = prefill + (N - 1) · tpot(b) + (c - 1) · interference · prefill · L / (O + L)
  where the decode step grows with the mean batch b = c · L / (O + L):
  tpot(b) = tpot(1) · (1 + batch_growth · (b - 1)).
- *Full slots* (c > slots): the slots turn over back to back, so a request meets one prefill
  from each other slot: L = prefill + (N - 1) · tpot(slots) + (slots - 1) · interference ·
  prefill, and a cycle lasts c · L / slots (the closed-loop wait).

A request's E2E is the larger of the two cycles' bounds: O + L, or c · L / slots. `slots` and
`interference` (in [0, 1]) are chosen on a grid to fit the measured E2E at every sweep point
above the lowest concurrency (where the model is exact by construction); for each slot count,
`batch_growth` follows from TPOT at the shortest swept prompt (where neighbours' prefills cost
least) against the lowest concurrency, so a slow decode cannot pass for a slot wait. The
prompt-length axis tells slots from interference: waiting for a slot grows with the whole
service time, the neighbours' prefills only with the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

INTERFERENCE_GRID = tuple(i / 10 for i in range(11))
SLOTS_GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0, 128.0)
MVA_ITERATIONS = 12


@dataclass(frozen=True)
class EnginePoint:
    """One measured sweep point, as the engine model sees it (ms; tokens)."""

    concurrency: float
    prefill_ms: float
    decode_steps: float
    tpot_alone_ms: float
    e2e_ms: float


@dataclass(frozen=True)
class EngineFit:
    """The fitted engine: `slots` (inf when never full), `interference` (the share of a
    neighbour's prefill a running request waits for), `batch_growth` (decode step growth per
    extra sequence, as a share of the lone step), and the fit's RMS log error on E2E."""

    overhead_ms: float
    slots: float = math.inf
    interference: float = 0.0
    batch_growth: float = 0.0
    rms_log_error: float = 0.0
    points: int = 0

    def e2e_ms(
        self,
        *,
        concurrency: float,
        prefill_ms: float,
        decode_steps: float,
        tpot_alone_ms: float,
        overhead_ms: float | None = None,
    ) -> float:
        """Predicted E2E (ms) of one request among `concurrency` identical ones."""
        o = max(self.overhead_ms if overhead_ms is None else overhead_ms, 0.0)
        c = max(concurrency, 1.0)
        growth, slots = self.batch_growth, self.slots
        neighbours_ms = (c - 1.0) * self.interference * prefill_ms
        in_engine_ms = prefill_ms + decode_steps * tpot_alone_ms
        for _ in range(MVA_ITERATIONS):  # the scalar twin of closed_loop_e2e_ms, 20x faster
            share = in_engine_ms / (o + in_engine_ms) if o > 0 else 1.0
            batch = min(max(c * share, 1.0), min(slots, c))
            own_ms = prefill_ms + decode_steps * tpot_alone_ms * (1.0 + growth * (batch - 1.0))
            b = own_ms + neighbours_ms - o
            in_engine_ms = (b + math.sqrt(b * b + 4.0 * own_ms * o)) / 2.0
        if slots >= c:
            return o + in_engine_ms
        slot_ms = (
            prefill_ms
            + decode_steps * tpot_alone_ms * (1.0 + growth * (slots - 1.0))
            + (slots - 1.0) * self.interference * prefill_ms
        )
        return max(o + in_engine_ms, c * slot_ms / slots)

    def wait_ms(
        self,
        *,
        concurrency: float,
        prefill_ms: float,
        decode_steps: float,
        tpot_alone_ms: float,
    ) -> float:
        """What sharing the engine adds (ms): the E2E above the request's own work at the
        batch it runs in (overhead, prefill, decode steps grown by the batch). Slot waits and
        neighbours' prefills; the part of it that lands before the first token is queueing."""
        batch = min(self.slots, max(concurrency, 1.0))
        own_ms = (
            self.overhead_ms
            + prefill_ms
            + decode_steps * tpot_alone_ms * (1.0 + self.batch_growth * (batch - 1.0))
        )
        e2e_ms = self.e2e_ms(
            concurrency=concurrency,
            prefill_ms=prefill_ms,
            decode_steps=decode_steps,
            tpot_alone_ms=tpot_alone_ms,
        )
        return max(e2e_ms - own_ms, 0.0)

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "slots": None if math.isinf(self.slots) else self.slots,
            "interference": round(self.interference, 3),
            "batch_growth": round(self.batch_growth, 4),
            "rms_log_error": round(self.rms_log_error, 4),
            "points": self.points,
        }


def closed_loop_e2e_ms(
    *,
    concurrency: float,
    overhead_ms: float,
    prefill_ms: float,
    decode_steps: float,
    tpot_alone_ms: float,
    slots: FloatArray,
    interference: FloatArray,
    batch_growth: FloatArray,
) -> FloatArray:
    """E2E (ms) under each parameter triple (the arrays broadcast together)."""
    o = max(overhead_ms, 0.0)
    c = max(concurrency, 1.0)
    neighbours_ms = (c - 1.0) * interference * prefill_ms
    in_engine_ms = np.full(
        np.broadcast(slots, interference, batch_growth).shape,
        prefill_ms + decode_steps * tpot_alone_ms,
    )
    for _ in range(MVA_ITERATIONS):
        share = in_engine_ms / (o + in_engine_ms) if o > 0 else np.ones_like(in_engine_ms)
        batch = np.clip(c * share, 1.0, np.minimum(slots, c))
        own_ms = prefill_ms + decode_steps * tpot_alone_ms * (1.0 + batch_growth * (batch - 1.0))
        b = own_ms + neighbours_ms - o
        in_engine_ms = (b + np.sqrt(b * b + 4.0 * own_ms * o)) / 2.0
    free_ms = o + in_engine_ms
    full_slots = np.minimum(slots, c)
    slot_ms = (
        prefill_ms
        + decode_steps * tpot_alone_ms * (1.0 + batch_growth * (full_slots - 1.0))
        + (full_slots - 1.0) * interference * prefill_ms
    )
    full_ms = np.where(slots < c, c * slot_ms / full_slots, 0.0)
    result: FloatArray = np.maximum(free_ms, full_ms)
    return result


def batch_growth_for(slots: float, tpot_growth: Sequence[tuple[float, float]]) -> float:
    """Decode step growth per extra sequence implied by measured TPOT ratios (TPOT at c over
    TPOT at the lowest concurrency, at the shortest prompt) when at most `slots` run at once."""
    estimates = [
        (ratio - 1.0) / (min(c, slots) - 1.0) for c, ratio in tpot_growth if min(c, slots) > 1.0
    ]
    return max(sum(estimates) / len(estimates), 0.0) if estimates else 0.0


def fit_engine(
    overhead_ms: float,
    points: Sequence[EnginePoint],
    tpot_growth: Sequence[tuple[float, float]] = (),
) -> EngineFit:
    """Grid-search slots and interference that best fit the points' E2E (least squares in
    log), the batch growth following from `tpot_growth` [(concurrency, TPOT ratio)]."""
    usable = [p for p in points if p.e2e_ms > 0 and p.concurrency > 1]
    if not usable:
        return EngineFit(overhead_ms=overhead_ms)
    grid = np.array(
        [
            (s, x, batch_growth_for(s, tpot_growth))
            for s in (*SLOTS_GRID, math.inf)
            for x in INTERFERENCE_GRID
        ]
    )
    slots, interference, growth = grid[:, 0], grid[:, 1], grid[:, 2]
    squared = np.zeros(len(grid))
    for point in usable:
        predicted = closed_loop_e2e_ms(
            concurrency=point.concurrency,
            overhead_ms=overhead_ms,
            prefill_ms=point.prefill_ms,
            decode_steps=point.decode_steps,
            tpot_alone_ms=point.tpot_alone_ms,
            slots=slots,
            interference=interference,
            batch_growth=growth,
        )
        squared += np.log(np.maximum(predicted, 1e-9) / point.e2e_ms) ** 2
    # Slot counts beyond the largest measured concurrency all look alike: among fits within a
    # hair of the best, take the most slots, then the least interference.
    best = float(squared.min())
    near = np.flatnonzero(squared <= best + 1e-9 + 1e-6 * best)
    i = sorted(near, key=lambda k: (-slots[k], interference[k]))[0]
    return EngineFit(
        overhead_ms=overhead_ms,
        slots=float(slots[i]),
        interference=float(interference[i]),
        batch_growth=float(growth[i]),
        rms_log_error=math.sqrt(float(squared[i]) / len(usable)),
        points=len(usable),
    )
