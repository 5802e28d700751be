"""A closed-loop benchmark in virtual time: what the harness would measure, in milliseconds of CPU.

`c` clients each send a warm-up request, then measured requests back to back until `requests`
measured ones have been sent, as the harness's closed-loop load generator does. Every request
spends the profile's request overhead and network round trip (plus an optional random jitter,
which stands in for the client's and the network's noise and keeps identical clients from
staying in lock step) before the engine sees it, then runs on the same `Scheduler` the server
uses. Nothing sleeps: a sweep that takes minutes on the wire takes milliseconds here, so the
advisor's accuracy can be explored over many profiles (`perf/advisor_virtual.py`) before the
real-time check.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

from simulator.engine import Scheduler, SimSequence, block_hashes
from simulator.profile import Profile


@dataclass(frozen=True, slots=True)
class LoopRequest:
    """One request as the client saw it (ms from its own send)."""

    client: int
    warmup: bool
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    ttft_ms: float
    e2e_ms: float

    @property
    def tpot_ms(self) -> float:
        """Mean gap between tokens after the first (the glossary's TPOT); 0 for one token."""
        if self.output_tokens < 2:
            return 0.0
        return (self.e2e_ms - self.ttft_ms) / (self.output_tokens - 1)


@dataclass(frozen=True, slots=True)
class LoopPlan:
    """One sweep point: `requests` measured requests from `concurrency` clients."""

    concurrency: int
    prompt_tokens: int
    output_tokens: int
    requests: int
    shared_prefix_tokens: int = 0
    front_jitter_ms: float = 0.0
    seed: int = 0


def _prompt_hashes(plan: LoopPlan, request_index: int) -> tuple[int, ...]:
    prefix = [f"shared{i}" for i in range(min(plan.shared_prefix_tokens, plan.prompt_tokens))]
    own = [f"r{request_index}-{i}" for i in range(plan.prompt_tokens - len(prefix))]
    return block_hashes(prefix + own)


def run_closed_loop(profile: Profile, plan: LoopPlan) -> list[LoopRequest]:
    """Run one closed-loop point in virtual time; requests in the order they were sent."""
    if plan.concurrency < 1 or plan.requests < 1:
        raise ValueError("concurrency and requests must be at least 1")
    rng = random.Random(plan.seed)
    scheduler = Scheduler(profile)
    front_s = (profile.request_overhead_ms + profile.network_rtt_ms) / 1000.0
    arrivals: list[tuple[float, int, int]] = []  # (engine arrival s, request index, client)
    sent: list[tuple[int, bool, float]] = []  # (client, warm-up, send s), by request index
    sequences: dict[int, SimSequence] = {}
    index_of: dict[int, int] = {}

    def send(client: int, at_s: float, warmup: bool) -> None:
        index = len(sent)
        sent.append((client, warmup, at_s))
        delay_s = front_s + rng.uniform(0.0, plan.front_jitter_ms / 1000.0)
        heapq.heappush(arrivals, (at_s + delay_s, index, client))

    for client in range(plan.concurrency):
        send(client, 0.0, warmup=True)
    measured_sent = 0
    now_s = 0.0
    while arrivals or scheduler.has_work:
        while arrivals and arrivals[0][0] <= now_s:
            at_s, index, _ = heapq.heappop(arrivals)
            seq = SimSequence(
                plan.prompt_tokens, plan.output_tokens, block_hashes=_prompt_hashes(plan, index)
            )
            sequences[index] = seq
            index_of[id(seq)] = index
            scheduler.submit(seq, at_s)
        step = scheduler.plan(now_s)
        if step is None:
            now_s = arrivals[0][0]
            continue
        end_s = step.started_s + step.duration_s
        for seq, _ in scheduler.complete(step):
            if seq.finished and measured_sent < plan.requests:
                client = sent[index_of[id(seq)]][0]
                send(client, end_s, warmup=False)
                measured_sent += 1
        now_s = end_s
    results = []
    for index, (client, warmup, sent_s) in enumerate(sent):
        seq = sequences[index]
        assert seq.first_token_s is not None
        assert seq.finished_s is not None
        results.append(
            LoopRequest(
                client=client,
                warmup=warmup,
                prompt_tokens=seq.prompt_tokens,
                cached_tokens=seq.cached_tokens,
                output_tokens=seq.output_tokens,
                ttft_ms=(seq.first_token_s - sent_s) * 1000.0,
                e2e_ms=(seq.finished_s - sent_s) * 1000.0,
            )
        )
    return results
