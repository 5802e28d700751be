"""Continuous-batching engine: a pure scheduler on an engine clock, and the loops that drive it.

`Scheduler` knows no wall clock: `simulate` runs it in virtual time (physics tests), `EngineLoop`
runs it in real time on asyncio (the server), scaled by `time_scale`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from advisor.core import roofline
from simulator.profile import Profile

PREFIX_BLOCK_TOKENS = 16


class TokenSink(Protocol):
    def deliver(self, seq: SimSequence, count: int, due_s: float) -> None:
        """`count` new tokens of `seq` are ready at `due_s` (the end of their step)."""


@dataclass(slots=True, eq=False)
class SimSequence:
    """One request inside the engine. Times are on the engine clock (seconds)."""

    prompt_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    block_hashes: tuple[int, ...] = ()
    sink: TokenSink | None = None
    submitted_s: float = 0.0
    admitted_s: float | None = None
    first_token_s: float | None = None
    finished_s: float | None = None
    cached_tokens: int = 0
    prefilled_tokens: int = 0
    generated_tokens: int = 0
    cancelled: bool = False

    @property
    def finished(self) -> bool:
        return self.generated_tokens >= self.output_tokens

    @property
    def context_tokens(self) -> int:
        return self.prompt_tokens + self.generated_tokens


@dataclass(slots=True)
class Step:
    """One engine step: the sequences decoding and the prompt chunks prefilled in it."""

    started_s: float
    duration_s: float
    decode: list[SimSequence]
    prefill: list[tuple[SimSequence, int]]


def block_hashes(tokens: Sequence[str]) -> tuple[int, ...]:
    """Chained hashes of each full block of PREFIX_BLOCK_TOKENS tokens, as vLLM keys its cache."""
    hashes: list[int] = []
    previous = 0
    for start in range(0, len(tokens) - PREFIX_BLOCK_TOKENS + 1, PREFIX_BLOCK_TOKENS):
        previous = hash((previous, tuple(tokens[start : start + PREFIX_BLOCK_TOKENS])))
        hashes.append(previous)
    return tuple(hashes)


class PrefixCache:
    """LRU cache of prompt blocks, keyed by chained block hashes, holding `capacity_tokens`."""

    def __init__(self, capacity_tokens: int) -> None:
        self._capacity_blocks = capacity_tokens // PREFIX_BLOCK_TOKENS
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def cached_tokens(self, hashes: Iterable[int]) -> int:
        """Tokens of the longest cached prefix (whole blocks); refreshes their recency."""
        hits = 0
        for block in hashes:
            if block not in self._blocks:
                break
            self._blocks.move_to_end(block)
            hits += 1
        return hits * PREFIX_BLOCK_TOKENS

    def insert(self, hashes: Iterable[int]) -> None:
        for block in hashes:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
        while len(self._blocks) > self._capacity_blocks:
            self._blocks.popitem(last=False)


class Scheduler:
    """Admits, batches and advances sequences; every step's duration comes from the roofline.

    Admission is first come, first served: a request waits while the batch is full or the KV
    cache cannot hold its prompt plus its output (reserved up front, so nothing is preempted).
    Decode tokens are scheduled first; prompts fill the rest of the step's token budget, so long
    prompts arriving in a burst lengthen the step every decoding sequence waits for.
    """

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.deployment = profile.deployment
        self.draft_deployment = profile.draft_deployment
        self.kv_capacity_tokens = profile.resolved_kv_capacity_tokens
        self.waiting: deque[SimSequence] = deque()
        self.running: list[SimSequence] = []
        self.kv_reserved_tokens = 0
        self.prefix_cache = (
            PrefixCache(profile.prefix_cache_tokens) if profile.prefix_cache else None
        )
        self._rng = random.Random(profile.seed)
        self._tokens_per_decode = profile.draft_tokens + 1 if profile.speculative else 1

    def fits(self, prompt_tokens: int, output_tokens: int) -> bool:
        """Whether one request could ever be admitted (its tokens fit in an empty KV cache)."""
        return prompt_tokens + output_tokens <= self.kv_capacity_tokens

    def submit(self, seq: SimSequence, now_s: float) -> None:
        seq.submitted_s = now_s
        self.waiting.append(seq)

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def _drop_cancelled(self) -> None:
        if any(seq.cancelled for seq in self.waiting):
            self.waiting = deque(seq for seq in self.waiting if not seq.cancelled)
        for seq in [seq for seq in self.running if seq.cancelled]:
            self._release(seq)

    def _release(self, seq: SimSequence) -> None:
        self.running.remove(seq)
        self.kv_reserved_tokens -= seq.prompt_tokens + seq.output_tokens

    def _admit(self, now_s: float) -> None:
        while self.waiting and len(self.running) < self.profile.max_batch_size:
            seq = self.waiting[0]
            reserved_tokens = seq.prompt_tokens + seq.output_tokens
            if self.kv_reserved_tokens + reserved_tokens > self.kv_capacity_tokens:
                break
            self.waiting.popleft()
            self.kv_reserved_tokens += reserved_tokens
            if self.prefix_cache is not None:
                # At least the last prompt token is always computed, to produce the first logits.
                cached = self.prefix_cache.cached_tokens(seq.block_hashes)
                seq.cached_tokens = min(cached, seq.prompt_tokens - 1)
            seq.prefilled_tokens = seq.cached_tokens
            seq.admitted_s = now_s
            self.running.append(seq)

    def plan(self, now_s: float) -> Step | None:
        """The next step starting at `now_s`, or None when there is nothing to do."""
        self._drop_cancelled()
        self._admit(now_s)
        decode = [seq for seq in self.running if seq.first_token_s is not None]
        decode_tokens = len(decode) * self._tokens_per_decode
        budget_tokens = self.profile.max_batched_tokens - decode_tokens
        prefill: list[tuple[SimSequence, int]] = []
        for seq in self.running:
            if seq.first_token_s is not None:
                continue
            remaining = seq.prompt_tokens - seq.prefilled_tokens
            chunk = (
                remaining if not self.profile.max_batched_tokens else min(remaining, budget_tokens)
            )
            if chunk <= 0:
                break
            budget_tokens -= chunk
            prefill.append((seq, chunk))
        if not decode and not prefill:
            return None
        return Step(now_s, self._duration_s(decode, prefill), decode, prefill)

    def _duration_s(
        self, decode: list[SimSequence], prefill: list[tuple[SimSequence, int]]
    ) -> float:
        model = self.deployment.model
        context_tokens = sum(seq.context_tokens for seq in decode)
        attention = roofline.decode_attention_flops(model, context_tokens) * self._tokens_per_decode
        kv_tokens_read = context_tokens
        tokens = len(decode) * self._tokens_per_decode
        for seq, chunk in prefill:
            end = seq.prefilled_tokens + chunk
            attention += roofline.attention_flops(model, seq.prefilled_tokens, end)
            kv_tokens_read += end
            tokens += chunk
        duration_s = roofline.step_time_s(
            self.deployment, tokens=tokens, attention_flops=attention, kv_tokens_read=kv_tokens_read
        )
        if decode and self.draft_deployment is not None:
            draft_step_s = roofline.step_time_s(
                self.draft_deployment,
                tokens=len(decode),
                attention_flops=roofline.decode_attention_flops(
                    self.draft_deployment.model, context_tokens
                ),
                kv_tokens_read=context_tokens,
            )
            duration_s += self.profile.draft_tokens * draft_step_s
        return duration_s + self.profile.step_overhead_ms / 1000.0

    def _accepted_tokens(self) -> int:
        """Tokens one verification emits: accepted drafts up to the first rejection, plus one."""
        accepted = 0
        while (
            accepted < self.profile.draft_tokens
            and self._rng.random() < self.profile.acceptance_rate
        ):
            accepted += 1
        return accepted + 1

    def complete(self, step: Step) -> list[tuple[SimSequence, int]]:
        """Apply `step`; returns (sequence, new tokens) for every sequence that produced tokens."""
        end_s = step.started_s + step.duration_s
        emitted: list[tuple[SimSequence, int]] = []
        for seq, chunk in step.prefill:
            seq.prefilled_tokens += chunk
            if seq.prefilled_tokens >= seq.prompt_tokens and not seq.cancelled:
                seq.first_token_s = end_s
                seq.generated_tokens = 1
                emitted.append((seq, 1))
                if self.prefix_cache is not None:
                    self.prefix_cache.insert(seq.block_hashes)
        for seq in step.decode:
            if seq.cancelled:
                continue
            count = self._accepted_tokens() if self._tokens_per_decode > 1 else 1
            count = min(count, seq.output_tokens - seq.generated_tokens)
            seq.generated_tokens += count
            emitted.append((seq, count))
        for seq, _ in emitted:
            if seq.finished:
                seq.finished_s = end_s
                self._release(seq)
        return emitted


@dataclass(slots=True)
class Arrival:
    """A request for `simulate`: when it arrives and what it asks for."""

    at_s: float
    prompt_tokens: int
    output_tokens: int
    block_hashes: tuple[int, ...] = ()


@dataclass(slots=True)
class SimResult:
    """What one request saw in a virtual run, in seconds from its arrival."""

    queue_s: float
    ttft_s: float
    token_times_s: list[float] = field(default_factory=list)
    cached_tokens: int = 0

    @property
    def tpot_s(self) -> float:
        """Mean gap between tokens after the first (the glossary's TPOT)."""
        if len(self.token_times_s) < 2:
            raise ValueError("TPOT needs at least 2 tokens")
        return (self.token_times_s[-1] - self.token_times_s[0]) / (len(self.token_times_s) - 1)


class _RecordingSink:
    def __init__(self) -> None:
        self.times_s: dict[int, list[float]] = {}

    def deliver(self, seq: SimSequence, count: int, due_s: float) -> None:
        self.times_s.setdefault(id(seq), []).extend([due_s] * count)


def simulate(profile: Profile, arrivals: Sequence[Arrival]) -> list[SimResult]:
    """Run the scheduler in virtual time over `arrivals`; one result per arrival, in order."""
    scheduler = Scheduler(profile)
    sink = _RecordingSink()
    pending = deque(sorted(arrivals, key=lambda arrival: arrival.at_s))
    sequences: dict[int, SimSequence] = {}
    now_s = 0.0
    while pending or scheduler.has_work:
        while pending and pending[0].at_s <= now_s:
            arrival = pending.popleft()
            seq = SimSequence(
                arrival.prompt_tokens, arrival.output_tokens, block_hashes=arrival.block_hashes
            )
            seq.sink = sink
            sequences[id(arrival)] = seq
            scheduler.submit(seq, arrival.at_s)
        step = scheduler.plan(now_s)
        if step is None:
            now_s = pending[0].at_s
            continue
        for seq, count in scheduler.complete(step):
            sink.deliver(seq, count, step.started_s + step.duration_s)
        now_s = step.started_s + step.duration_s
    results = []
    for arrival in arrivals:
        seq = sequences[id(arrival)]
        assert seq.admitted_s is not None
        assert seq.first_token_s is not None
        results.append(
            SimResult(
                queue_s=seq.admitted_s - seq.submitted_s,
                ttft_s=seq.first_token_s - seq.submitted_s,
                token_times_s=[t - seq.submitted_s for t in sink.times_s[id(seq)]],
                cached_tokens=seq.cached_tokens,
            )
        )
    return results


# Event-loop timers have millisecond resolution (uvloop's fire up to a millisecond early or
# late), so an engine asks to wake this much before a step ends and yields until it is due.
EARLY_WAKE_S = 0.0015


async def _sleep_until(due_s: float) -> None:
    """Return at `due_s` on the perf_counter clock, never before, usually within ~0.1 ms."""
    delay_s = due_s - time.perf_counter() - EARLY_WAKE_S
    # Yields even when already late, so an engine that falls behind cannot starve the server.
    await asyncio.sleep(max(delay_s, 0.0))
    while time.perf_counter() < due_s:
        await asyncio.sleep(0)


class EngineLoop:
    """Drives one Scheduler in real time; engine seconds are `time_scale` real seconds.

    Steps follow each other back to back on the schedule (the next starts when the previous was
    due to end, not when its tokens were written), so slow writes show up as lag, not as drift.
    """

    def __init__(self, scheduler: Scheduler, *, time_scale: float = 1.0) -> None:
        self.scheduler = scheduler
        self.time_scale = time_scale
        self._origin_s = time.perf_counter()
        self._wake = asyncio.Event()

    def engine_s(self, real_s: float) -> float:
        return (real_s - self._origin_s) / self.time_scale

    def real_s(self, engine_s: float) -> float:
        return self._origin_s + engine_s * self.time_scale

    def submit(self, seq: SimSequence) -> None:
        self.scheduler.submit(seq, self.engine_s(time.perf_counter()))
        self._wake.set()

    async def run(self) -> None:
        scheduler = self.scheduler
        next_start_s: float | None = None
        while True:
            if not scheduler.has_work:
                next_start_s = None
                self._wake.clear()
                await self._wake.wait()
            now_s = time.perf_counter()
            start_s = now_s if next_start_s is None else next_start_s
            step = scheduler.plan(self.engine_s(start_s))
            if step is None:
                # Sequences remain but none can run (all cancelled mid-step): look again later.
                next_start_s = None
                self._wake.clear()
                await self._wake.wait()
                continue
            end_s = start_s + step.duration_s * self.time_scale
            await _sleep_until(end_s)
            for seq, count in scheduler.complete(step):
                if seq.sink is not None:
                    seq.sink.deliver(seq, count, end_s)
            next_start_s = end_s
