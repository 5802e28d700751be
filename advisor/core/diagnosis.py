"""Where the typical request's latency goes, and whether the data can support saying so.

The breakdown is predicted at the workload's own prompt length and concurrency (interpolated),
never averaged over the sweep.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from advisor.core.fit import LatencyModel, SampleTable
from advisor.core.workload import TypicalRequest

PARTS: tuple[str, ...] = ("overhead", "queueing", "prefill", "decode")
TTFT_PARTS: tuple[str, ...] = ("overhead", "queueing", "prefill")
MIN_PROMPT_LENGTHS = 3
MIN_SUCCESSES_PER_POINT = 5
MAX_EXTRAPOLATION = 1.5
MIN_CONFIDENCE = 0.6
REASONING_MIN_TPOTS = 2.0
"""TTFA - TTFT must exceed this many TPOTs before the model is called a reasoning model."""


@dataclass(frozen=True)
class Breakdown:
    """Predicted latency of one request, split by phase (ms). `reasoning_ms` is part of decode."""

    overhead_ms: float
    queueing_ms: float
    prefill_ms: float
    decode_ms: float
    tpot_ms: float
    reasoning_ms: float

    @property
    def ttft_ms(self) -> float:
        return self.overhead_ms + self.queueing_ms + self.prefill_ms

    @property
    def e2e_ms(self) -> float:
        return self.ttft_ms + self.decode_ms

    @property
    def ttfa_ms(self) -> float:
        """Predicted time to the first visible answer token: TTFT plus the thinking."""
        return self.ttft_ms + self.reasoning_ms

    @property
    def is_reasoning(self) -> bool:
        return self.reasoning_ms > REASONING_MIN_TPOTS * self.tpot_ms

    def parts(self) -> dict[str, float]:
        return {
            "overhead": self.overhead_ms,
            "queueing": self.queueing_ms,
            "prefill": self.prefill_ms,
            "decode": self.decode_ms,
        }

    @property
    def bottleneck(self) -> str:
        """The largest of overhead, queueing, prefill and decode."""
        parts = self.parts()
        return max(PARTS, key=lambda name: parts[name])

    @property
    def ttft_bottleneck(self) -> str:
        """The largest part of the wait for the first token: slow to start, and why."""
        parts = self.parts()
        return max(TTFT_PARTS, key=lambda name: parts[name])

    @property
    def margin(self) -> float:
        """Largest part over the second largest (inf when the second is 0)."""
        first, second = sorted(self.parts().values(), reverse=True)[:2]
        return math.inf if second <= 0 else first / second

    def to_dict(self) -> dict[str, float]:
        data = {name: round(value, 3) for name, value in self.parts().items()}
        if self.is_reasoning:
            data["reasoning"] = round(self.reasoning_ms, 3)
            data["ttfa"] = round(self.ttfa_ms, 3)
        return data


def predict(
    model: LatencyModel,
    *,
    prompt_tokens: float,
    cached_tokens: float,
    output_tokens: float,
    concurrency: float,
) -> Breakdown:
    """The latency model's prediction for one request (ms).

    overhead + queue(c, P, S) + prefill(P - cached) + (N - 1) * tpot(c, P), where the queue
    is rescaled to this request's own slot time S = prefill + decode.
    """
    tpot_ms = model.tpot_ms_at(concurrency, prompt_tokens)
    prefill_ms = model.prefill.prefill_ms(max(prompt_tokens - cached_tokens, 0.0))
    decode_ms = max(output_tokens - 1.0, 0.0) * tpot_ms
    return Breakdown(
        overhead_ms=max(model.prefill.overhead_ms, 0.0),
        queueing_ms=model.queue_ms_at(
            concurrency,
            prompt_tokens,
            prefill_ms=prefill_ms,
            decode_steps=max(output_tokens - 1.0, 0.0),
        ),
        prefill_ms=prefill_ms,
        decode_ms=decode_ms,
        tpot_ms=tpot_ms,
        reasoning_ms=model.reasoning_ms_at(concurrency, prompt_tokens),
    )


def predict_typical(model: LatencyModel, request: TypicalRequest, cached_tokens: int) -> Breakdown:
    """`predict` for the workload's typical request."""
    return predict(
        model,
        prompt_tokens=request.prompt_tokens,
        cached_tokens=cached_tokens,
        output_tokens=request.output_tokens,
        concurrency=request.concurrency,
    )


@dataclass(frozen=True)
class Reason:
    """Why the advisor withholds a verdict: a stable code and a sentence for people."""

    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def _points_used(keys: Sequence[tuple[int, int]], concurrency: int) -> list[tuple[int, int]]:
    """Sweep points the prediction at `concurrency` reads: the lowest concurrency (the fit) and
    the measured concurrencies bracketing the target."""
    measured = sorted({c for c, _ in keys})
    below = [c for c in measured if c <= concurrency]
    above = [c for c in measured if c >= concurrency]
    used = {measured[0]}
    used.update(below[-1:] or measured[:2])
    used.update(above[:1] or measured[-2:])
    return [key for key in keys if key[0] in used]


def data_reasons(
    table: SampleTable, request: TypicalRequest, all_points: Sequence[tuple[int, int, int]]
) -> list[Reason]:
    """Reasons the data cannot support a verdict for this request (empty when it can).

    `all_points` lists (concurrency, target prompt tokens, successes) for every planned point,
    failed ones included, so a point that never succeeded still counts as too thin.
    """
    reasons: list[Reason] = []
    lowest = min(c for c, _ in table.groups)
    lengths = sorted({p for c, p in table.groups if c == lowest})
    if len(lengths) < MIN_PROMPT_LENGTHS:
        reasons.append(
            Reason(
                "too_few_prompt_lengths",
                f"only {len(lengths)} prompt length(s) at concurrency {lowest}; "
                f"the TTFT fit needs at least {MIN_PROMPT_LENGTHS}",
            )
        )
    successes = {(c, p): n for c, p, n in all_points}
    used = _points_used(sorted(successes), request.concurrency)
    thin = [(c, p, successes[c, p]) for c, p in used if successes[c, p] < MIN_SUCCESSES_PER_POINT]
    for c, p, n in thin:
        reasons.append(
            Reason(
                "too_few_samples",
                f"{n} successful request(s) at concurrency {c}, {p} prompt tokens; "
                f"need at least {MIN_SUCCESSES_PER_POINT}",
            )
        )
    measured_c = [c for c, _ in table.groups]
    reasons += _range_reasons(
        "concurrency", float(request.concurrency), min(measured_c), max(measured_c)
    )
    low_rows = [
        rows for (c, _), rows in zip(table.groups, table.rows_by_group, strict=True) if c == lowest
    ]
    measured_p = [float(table.prompt_tokens[r].min()) for r in low_rows] + [
        float(table.prompt_tokens[r].max()) for r in low_rows
    ]
    reasons += _range_reasons(
        "prompt_tokens", float(request.prompt_tokens), min(measured_p), max(measured_p)
    )
    return reasons


def _range_reasons(name: str, value: float, low: float, high: float) -> list[Reason]:
    if value > MAX_EXTRAPOLATION * high or value * MAX_EXTRAPOLATION < low:
        return [
            Reason(
                f"{name}_out_of_range",
                f"workload {name} {value:g} is beyond {MAX_EXTRAPOLATION}x the measured range "
                f"{low:g}-{high:g}; measure closer to it",
            )
        ]
    return []


def confidence_reason(confidence: float, bottleneck: str) -> list[Reason]:
    """A reason when bootstrap resamples disagree on the bottleneck too often."""
    if confidence >= MIN_CONFIDENCE:
        return []
    return [
        Reason(
            "low_confidence",
            f"only {confidence:.0%} of bootstrap resamples name {bottleneck} as the bottleneck "
            f"(need {MIN_CONFIDENCE:.0%}): two parts are too close to call",
        )
    ]


def slo_status(
    breakdown: Breakdown, *, ttft_slo_ms: float | None, tpot_slo_ms: float | None
) -> dict[str, dict[str, float | bool]] | None:
    """Per phase, the SLO, the prediction for the typical request and whether it is met."""
    status: dict[str, dict[str, float | bool]] = {}
    for phase, slo_ms, predicted_ms in (
        ("ttft", ttft_slo_ms, breakdown.ttft_ms),
        ("tpot", tpot_slo_ms, breakdown.tpot_ms),
    ):
        if slo_ms is not None:
            status[phase] = {
                "slo_ms": slo_ms,
                "predicted_ms": round(predicted_ms, 3),
                "met": predicted_ms <= slo_ms,
            }
    return status or None
