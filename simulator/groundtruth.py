"""Ground truth the harness is scored against: per-request records and the server's own write lag.

Records go to a JSON-lines file (one line per finished request) and stay in memory for lookup
by request id. The lag monitor logs `falling_behind` when a second's p99 lag passes its limit.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

logger = logging.getLogger("simulator")

_HISTOGRAM_BINS_PER_MS = 50
_HISTOGRAM_MAX_MS = 1000


@dataclass(slots=True)
class RequestRecord:
    """What really happened to one request. Offsets are ms from `arrival_ns`.

    `arrival_ns` is `time.perf_counter_ns()` (CLOCK_MONOTONIC, comparable across processes on
    one machine) when the server had read the whole request. `queue_ms` runs from the hand-off to
    the engine (after the simulated network round trip and request overhead) to the step that
    starts its prefill; `prefill_ms` from there to
    the end of the step that produced its first token. `chunk_write_ns` / `chunk_offsets_ms` are
    the actual times each token-carrying chunk was handed to the socket, with its token count in
    `chunk_tokens`. `completion_tokens` counts what the engine generated: for a request that
    ended early, sum(chunk_tokens) is what was actually sent.
    """

    request_id: str
    model: str
    endpoint: str
    stream: bool
    arrival_ns: int
    arrival_unix_s: float
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    network_delay_ms: float = 0.0
    request_overhead_ms: float = 0.0
    queue_ms: float | None = None
    prefill_ms: float | None = None
    headers_offset_ms: float | None = None
    chunk_write_ns: list[int] = field(default_factory=list)
    chunk_offsets_ms: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    fault: str | None = None
    status: int = 200
    outcome: str = "success"

    def note_chunk(self, write_ns: int, tokens: int) -> None:
        self.chunk_write_ns.append(write_ns)
        self.chunk_offsets_ms.append((write_ns - self.arrival_ns) / 1e6)
        self.chunk_tokens.append(tokens)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class GroundTruthLog:
    """Keeps the last `keep` records by request id and appends each to an optional JSONL file."""

    def __init__(self, path: Path | None = None, keep: int = 10_000) -> None:
        self._keep = keep
        self._records: OrderedDict[str, RequestRecord] = OrderedDict()
        self._file: TextIO | None = path.open("a", buffering=1) if path else None

    def add(self, record: RequestRecord) -> None:
        self._records[record.request_id] = record
        if len(self._records) > self._keep:
            self._records.popitem(last=False)
        if self._file is not None:
            self._file.write(json.dumps(record.as_dict(), separators=(",", ":")) + "\n")

    def get(self, request_id: str) -> RequestRecord | None:
        return self._records.get(request_id)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _percentile_ms(sorted_ms: list[float], share: float) -> float:
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, int(share * len(sorted_ms)))]


class LagMonitor:
    """Lag of each chunk write behind its scheduled step end, per second and over the run."""

    def __init__(self, limit_ms: float = 10.0) -> None:
        self.limit_ms = limit_ms
        self.reset()

    def reset(self) -> None:
        """Forget every chunk seen so far (the perf script resets after its warm-up)."""
        self._window_ms: list[float] = []
        self._histogram = [0] * (_HISTOGRAM_MAX_MS * _HISTOGRAM_BINS_PER_MS + 1)
        self.chunks = 0
        self.falling_behind_seconds = 0
        self.max_lag_ms = 0.0

    def record(self, lag_ms: float) -> None:
        self._window_ms.append(lag_ms)
        index = int(lag_ms * _HISTOGRAM_BINS_PER_MS) if lag_ms > 0 else 0
        self._histogram[min(index, len(self._histogram) - 1)] += 1
        self.chunks += 1
        if lag_ms > self.max_lag_ms:
            self.max_lag_ms = lag_ms

    def tick(self) -> None:
        """Close a one-second window: log `falling_behind` if its p99 passed the limit."""
        window = sorted(self._window_ms)
        self._window_ms = []
        p99_ms = _percentile_ms(window, 0.99)
        if p99_ms > self.limit_ms:
            self.falling_behind_seconds += 1
            logger.warning(
                "falling_behind p99_ms=%.2f p50_ms=%.2f chunks=%d limit_ms=%.1f",
                p99_ms,
                _percentile_ms(window, 0.5),
                len(window),
                self.limit_ms,
            )

    async def run(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self.tick()

    def percentile_ms(self, share: float) -> float:
        """Lag percentile over every chunk so far, to 1/_HISTOGRAM_BINS_PER_MS ms."""
        target = share * self.chunks
        seen = 0
        for index, count in enumerate(self._histogram):
            seen += count
            if seen >= target and seen > 0:
                return (index + 1) / _HISTOGRAM_BINS_PER_MS
        return 0.0

    def summary(self) -> dict[str, float]:
        return {
            "chunks": self.chunks,
            "lag_p50_ms": self.percentile_ms(0.5),
            "lag_p99_ms": self.percentile_ms(0.99),
            "lag_max_ms": self.max_lag_ms,
            "falling_behind_seconds": self.falling_behind_seconds,
        }
