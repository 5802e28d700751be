"""Sweeps of the simulator's engine in virtual time, as advisor samples (no wire, no waiting)."""

from __future__ import annotations

import statistics

from advisor.core.samples import Sample
from simulator.closedloop import LoopPlan, LoopRequest, run_closed_loop
from simulator.profile import Profile

REQUESTS_PER_CLIENT = 5


def point_plan(
    concurrency: int,
    prompt_tokens: int,
    output_tokens: int,
    *,
    jitter_ms: float = 1.0,
    shared_prefix_tokens: int = 0,
    seed: int = 0,
) -> LoopPlan:
    """One point as the accuracy runs measure it: at least 8 requests, 5 per client."""
    return LoopPlan(
        concurrency=concurrency,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        requests=max(8, REQUESTS_PER_CLIENT * concurrency),
        shared_prefix_tokens=shared_prefix_tokens,
        front_jitter_ms=jitter_ms,
        seed=seed,
    )


def to_samples(requests: list[LoopRequest], concurrency: int, target: int) -> list[Sample]:
    return [
        Sample(
            concurrency=concurrency,
            target_prompt_tokens=target,
            target_output_tokens=r.output_tokens,
            ttft_ms=r.ttft_ms,
            e2e_ms=r.e2e_ms,
            prompt_tokens=r.prompt_tokens,
            cached_prompt_tokens=r.cached_tokens,
            output_tokens=r.output_tokens,
            tpot_ms=r.tpot_ms,
            warmup=r.warmup,
        )
        for r in requests
    ]


def sweep_samples(
    profile: Profile,
    *,
    prompt_lengths: tuple[int, ...],
    concurrencies: tuple[int, ...],
    output_tokens: int,
    jitter_ms: float = 1.0,
    seed: int = 0,
) -> list[Sample]:
    samples: list[Sample] = []
    for c in concurrencies:
        for p in prompt_lengths:
            plan = point_plan(c, p, output_tokens, jitter_ms=jitter_ms, seed=seed)
            samples += to_samples(run_closed_loop(profile, plan), c, p)
    return samples


def mean_e2e_ms(profile: Profile, plan: LoopPlan) -> float:
    """10%-trimmed mean E2E of the point's measured requests, as the accuracy runs take it."""
    values = sorted(r.e2e_ms for r in run_closed_loop(profile, plan) if not r.warmup)
    cut = len(values) // 10
    return statistics.fmean(values[cut : len(values) - cut])
