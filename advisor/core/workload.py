"""The workload the advice is for, and its typical request (median prompt, median output, target c).

Unset fields default from the run: the middle swept prompt length, the plan's output length, c = 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from advisor.core.samples import Sample

Objective = Literal["latency", "throughput"]
Serving = Literal["self_hosted", "managed_api"]
OBJECTIVES: tuple[Objective, ...] = ("latency", "throughput")
SERVINGS: tuple[Serving, ...] = ("self_hosted", "managed_api")


class WorkloadError(ValueError):
    """A workload the advisor cannot use; the message says which field and why."""


@dataclass(frozen=True)
class Workload:
    """What the user will send. Token counts are per request; None means "default from the run"."""

    prompt_tokens: int | None = None
    output_tokens: int | None = None
    concurrency: int | None = None
    shared_prefix_tokens: int = 0
    objective: Objective = "latency"
    serving: Serving = "self_hosted"

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "output_tokens", "concurrency"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise WorkloadError(f"workload {name} must be at least 1, got {value}")
        if self.shared_prefix_tokens < 0:
            raise WorkloadError("workload shared_prefix_tokens cannot be negative")
        if self.objective not in OBJECTIVES:
            raise WorkloadError(f"objective must be one of {', '.join(OBJECTIVES)}")
        if self.serving not in SERVINGS:
            raise WorkloadError(f"serving must be one of {', '.join(SERVINGS)}")

    @classmethod
    def from_prompts(
        cls,
        prompt_token_counts: Sequence[int],
        *,
        shared_prefix_tokens: int = 0,
        output_token_counts: Sequence[int] = (),
        concurrency: int | None = None,
        objective: Objective = "latency",
        serving: Serving = "self_hosted",
    ) -> Workload:
        """The typical request of a set of prompts: median prompt and median output tokens."""
        if not prompt_token_counts:
            raise WorkloadError("a workload built from prompts needs at least one prompt")
        output = round(statistics.median(output_token_counts)) if output_token_counts else None
        return cls(
            prompt_tokens=round(statistics.median(prompt_token_counts)),
            output_tokens=output,
            concurrency=concurrency,
            shared_prefix_tokens=shared_prefix_tokens,
            objective=objective,
            serving=serving,
        )


@dataclass(frozen=True)
class TypicalRequest:
    """The request the diagnosis is about: prompt tokens (of which `cached_tokens` hit a cache)."""

    prompt_tokens: int
    output_tokens: int
    concurrency: int
    shared_prefix_tokens: int
    objective: Objective
    serving: Serving


def typical_request(workload: Workload, samples: Sequence[Sample]) -> TypicalRequest:
    """Fill the workload's unset fields from the run's usable samples.

    Prompt tokens default to the measured median of the middle swept prompt length, output tokens
    to the median measured output length, concurrency to 1.
    """
    usable = [s for s in samples if s.usable]
    prompt = workload.prompt_tokens
    if prompt is None:
        targets = sorted({s.target_prompt_tokens for s in usable})
        if not targets:
            raise WorkloadError("no successful request to take a default prompt length from")
        middle = targets[(len(targets) - 1) // 2]
        measured = [
            s.prompt_tokens if s.prompt_tokens is not None else s.target_prompt_tokens
            for s in usable
            if s.target_prompt_tokens == middle
        ]
        prompt = round(statistics.median(measured))
    output = workload.output_tokens
    if output is None:
        counts = [s.output_tokens or s.target_output_tokens for s in usable]
        if not counts:
            raise WorkloadError("no successful request to take a default output length from")
        output = round(statistics.median(counts))
    return TypicalRequest(
        prompt_tokens=prompt,
        output_tokens=output,
        concurrency=workload.concurrency or 1,
        shared_prefix_tokens=min(workload.shared_prefix_tokens, prompt),
        objective=workload.objective,
        serving=workload.serving,
    )
