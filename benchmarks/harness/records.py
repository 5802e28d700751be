"""Per-request measurement records, in the glossary's names and units."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["success", "incomplete", "error"]


@dataclass(slots=True)
class RequestRecord:
    """One request as the client saw it. Times in ms from `sent`, None when undefined.

    `scheduled_s` and `sent_s` are seconds from the start of the run. `chunk_offsets_us` holds
    the arrival of each token-carrying chunk in integer microseconds after `sent`, and
    `chunk_chars` its character count (content plus reasoning).
    """

    concurrency: int
    target_prompt_tokens: int
    target_output_tokens: int
    warmup: bool = False
    purpose: str = "sweep"
    nonce: str | None = None
    scheduled_s: float = 0.0
    sent_s: float | None = None
    connect_ms: float | None = None
    ttfb_ms: float | None = None
    ttft_ms: float | None = None
    ttfa_ms: float | None = None
    e2e_ms: float | None = None
    chunk_offsets_us: list[int] = field(default_factory=list)
    chunk_chars: list[int] = field(default_factory=list)
    output_tokens: int | None = None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    tokens_estimated: bool = False
    finish_reason: str | None = None
    outcome: Outcome = "error"
    error_code: str | None = None
    error_message: str | None = None
    http_status: int | None = None

    @property
    def client_delay_ms(self) -> float | None:
        """`sent_s - scheduled_s` in ms: how far the load generator fell behind."""
        if self.sent_s is None:
            return None
        return (self.sent_s - self.scheduled_s) * 1000.0

    @property
    def tpot_ms(self) -> float | None:
        """`(e2e_ms - ttft_ms) / (output_tokens - 1)`; None below 2 tokens."""
        if self.e2e_ms is None or self.ttft_ms is None or self.output_tokens is None:
            return None
        if self.output_tokens < 2:
            return None
        return (self.e2e_ms - self.ttft_ms) / (self.output_tokens - 1)

    @property
    def itl_ms(self) -> list[float]:
        """Gaps between consecutive token-carrying chunks, in ms (chunk level, not per token)."""
        offsets = self.chunk_offsets_us
        return [(later - earlier) / 1000.0 for earlier, later in itertools.pairwise(offsets)]

    def to_dict(self) -> dict[str, Any]:
        """Every field plus the derived `client_delay_ms`, `tpot_ms` and `itl_ms`."""
        data = dataclasses.asdict(self)
        data["client_delay_ms"] = self.client_delay_ms
        data["tpot_ms"] = self.tpot_ms
        data["itl_ms"] = self.itl_ms
        return data
