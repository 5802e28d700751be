"""The advisor's inputs: per-request samples and run-level facts, without importing the harness.

Any object with the attribute names of `benchmarks.harness.records.RequestRecord` converts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class RequestLike(Protocol):
    """The attributes the advisor reads from one measured request (glossary names and units)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def target_prompt_tokens(self) -> int: ...
    @property
    def target_output_tokens(self) -> int: ...
    @property
    def warmup(self) -> bool: ...
    @property
    def connect_ms(self) -> float | None: ...
    @property
    def ttft_ms(self) -> float | None: ...
    @property
    def ttfa_ms(self) -> float | None: ...
    @property
    def e2e_ms(self) -> float | None: ...
    @property
    def tpot_ms(self) -> float | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def cached_prompt_tokens(self) -> int | None: ...
    @property
    def tokens_estimated(self) -> bool: ...
    @property
    def outcome(self) -> str: ...


@dataclass(frozen=True)
class Sample:
    """One measured request, reduced to what the latency model needs (durations in ms)."""

    concurrency: int
    target_prompt_tokens: int
    target_output_tokens: int
    ttft_ms: float | None
    e2e_ms: float | None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    output_tokens: int | None = None
    tpot_ms: float | None = None
    ttfa_ms: float | None = None
    connect_ms: float | None = None
    tokens_estimated: bool = False
    warmup: bool = False
    outcome: str = "success"

    @property
    def usable(self) -> bool:
        """True for a measured (not warm-up) success with a TTFT and an E2E."""
        return (
            self.outcome == "success"
            and not self.warmup
            and self.ttft_ms is not None
            and self.e2e_ms is not None
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def sample_from_record(record: RequestLike) -> Sample:
    """Copy the attributes the advisor uses from a harness `RequestRecord` (or lookalike)."""
    return Sample(
        concurrency=int(record.concurrency),
        target_prompt_tokens=int(record.target_prompt_tokens),
        target_output_tokens=int(record.target_output_tokens),
        ttft_ms=_optional_float(record.ttft_ms),
        e2e_ms=_optional_float(record.e2e_ms),
        prompt_tokens=_optional_int(record.prompt_tokens),
        cached_prompt_tokens=_optional_int(record.cached_prompt_tokens),
        output_tokens=_optional_int(record.output_tokens),
        tpot_ms=_optional_float(record.tpot_ms),
        ttfa_ms=_optional_float(record.ttfa_ms),
        connect_ms=_optional_float(record.connect_ms),
        tokens_estimated=bool(record.tokens_estimated),
        warmup=bool(record.warmup),
        outcome=str(record.outcome),
    )


def samples_from_records(records: Iterable[RequestLike | Sample]) -> list[Sample]:
    """Convert sweep records to samples; `Sample` objects pass through unchanged.

    Records whose `purpose` (when they have one) is not "sweep" (calibration, cache probe) are
    left out: their prompts are not part of the prompt-length sweep.
    """
    return [
        r if isinstance(r, Sample) else sample_from_record(r)
        for r in records
        if getattr(r, "purpose", "sweep") == "sweep"
    ]


@dataclass(frozen=True)
class CacheProbe:
    """The harness's prompt-cache probe: does a warm repeat of the same prompt start faster?

    `server_caches` is True, False, or None when the probe could not tell. TTFTs are in ms.
    """

    server_caches: bool | None
    cold_ttft_ms: float | None = None
    warm_ttft_ms: float | None = None
    shared_prefix_ttft_ms: float | None = None
    prompt_tokens: int | None = None
    warm_cached_tokens: int | None = None

    @property
    def measured_saving_ms(self) -> float | None:
        """Cold minus warm TTFT (ms): what the server's cache saved on a repeated prompt."""
        if self.cold_ttft_ms is None or self.warm_ttft_ms is None:
            return None
        return self.cold_ttft_ms - self.warm_ttft_ms


def _first_number(block: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = block.get(key)
        if isinstance(value, Mapping):
            value = value.get("ttft_ms")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def cache_probe_from_report(block: Mapping[str, Any] | None) -> CacheProbe | None:
    """Read the report's `cache_probe` block (None when the probe was not run).

    Accepts the harness's flat keys (`cold_ttft_ms`, `warm_cached_prompt_tokens`, medians
    that may be fractional) or nested ones (`cold: {ttft_ms: ...}`).
    """
    if block is None:
        return None
    caches = block.get("server_caches")
    warm = block.get("warm")
    warm_cached = _first_number(block, "warm_cached_prompt_tokens", "warm_cached_tokens")
    if warm_cached is None and isinstance(warm, Mapping):
        warm_cached = _first_number(warm, "cached_tokens")
    prompt_tokens = _first_number(block, "prompt_tokens")
    return CacheProbe(
        server_caches=caches if isinstance(caches, bool) else None,
        cold_ttft_ms=_first_number(block, "cold_ttft_ms", "cold"),
        warm_ttft_ms=_first_number(block, "warm_ttft_ms", "warm"),
        shared_prefix_ttft_ms=_first_number(block, "shared_prefix_ttft_ms", "shared_prefix"),
        prompt_tokens=None if prompt_tokens is None else round(prompt_tokens),
        warm_cached_tokens=None if warm_cached is None else round(warm_cached),
    )


@dataclass(frozen=True)
class Slo:
    """Per-request service-level objectives in ms; None means no objective for that phase."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None

    @property
    def given(self) -> bool:
        return self.ttft_ms is not None or self.tpot_ms is not None


@dataclass(frozen=True)
class Declared:
    """What the user says the endpoint runs on; all three are needed for a roofline."""

    hardware: str | None = None
    model: str | None = None
    dtype: str | None = None
    devices: int = 1
    """Devices the model is split over (tensor parallel); the roofline adds up their peaks."""

    @property
    def complete(self) -> bool:
        return self.hardware is not None and self.model is not None and self.dtype is not None
