"""Load patterns: closed loop at fixed concurrency, open loop with Poisson arrivals, warm-up.

Also the client monitor that watches event-loop lag and the loop thread's CPU during a point.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

# send(index, warmup, scheduled_ns) runs one request; it never raises except on cancellation.
SendFn = Callable[[int, bool, int], Awaitable[object]]

TICK_S = 0.005


async def run_load(
    send: SendFn,
    *,
    concurrency: int,
    requests: int,
    warmup: int = 0,
    rate_per_s: float | None = None,
    duration_s: float | None = None,
    seed: int = 0,
) -> None:
    """Warm-up first, then `requests` measured requests or `duration_s` seconds.

    Closed loop: a request is due when its concurrency slot frees, and each slot goes straight
    from its warm-up requests to measured ones, so the measured requests meet a server already
    in its steady state (a barrier after warm-up would start them all at once, and a queueing
    server would make the first wave wait less than the rest). Open loop: warm-up runs closed
    loop, then requests are due at Poisson arrival times of `rate_per_s`, and `concurrency`
    caps how many are in flight; a request that waits for a slot shows it as client delay.
    """
    if rate_per_s is None:
        await _closed_loop(
            send, count=requests, concurrency=concurrency, warmup=warmup, duration_s=duration_s
        )
        return
    if warmup:
        await _closed_loop(send, count=0, concurrency=concurrency, warmup=warmup)
    deadline_ns = None
    if duration_s is not None:
        deadline_ns = time.perf_counter_ns() + int(duration_s * 1e9)
    else:
        await _open_loop(
            send,
            count=requests,
            concurrency=concurrency,
            rate_per_s=rate_per_s,
            deadline_ns=deadline_ns,
            rng=random.Random(seed),
        )


async def _closed_loop(
    send: SendFn,
    *,
    count: int,
    concurrency: int,
    warmup: int = 0,
    duration_s: float | None = None,
) -> None:
    """`warmup` then `count` requests from `concurrency` slots; measured requests are numbered
    from 0, and `duration_s` runs from the first measured request."""
    next_index = 0
    deadline_ns: int | None = None

    async def worker() -> None:
        nonlocal next_index, deadline_ns
        while next_index < warmup + count:
            now_ns = time.perf_counter_ns()
            index, next_index = next_index, next_index + 1
            if index < warmup:
                await send(index, True, now_ns)
                continue
            if deadline_ns is None and duration_s is not None:
                deadline_ns = now_ns + int(duration_s * 1e9)
            if deadline_ns is not None and now_ns >= deadline_ns:
                return
            await send(index - warmup, False, now_ns)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, warmup + count)):
            group.create_task(worker())


async def _open_loop(
    send: SendFn,
    *,
    count: int,
    concurrency: int,
    rate_per_s: float,
    deadline_ns: int | None,
    rng: random.Random,
) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def run(index: int, due_ns: int) -> None:
        try:
            await send(index, False, due_ns)
        finally:
            slots.release()

    due_ns = time.perf_counter_ns()
    async with asyncio.TaskGroup() as group:
        for index in range(count):
            due_ns += int(rng.expovariate(rate_per_s) * 1e9)
            if deadline_ns is not None and due_ns >= deadline_ns:
                break
            wait_ns = due_ns - time.perf_counter_ns()
            if wait_ns > 0:
                await asyncio.sleep(wait_ns / 1e9)
            await slots.acquire()
            group.create_task(run(index, due_ns))


@dataclass(frozen=True)
class ClientLoad:
    """How busy the client was: the loop thread's CPU share and the event loop's lag."""

    wall_s: float
    cpu_share: float
    loop_lag_p99_ms: float
    loop_lag_max_ms: float


class ClientMonitor:
    """Ticks every `TICK_S` to measure how late the event loop wakes up; reads thread CPU time."""

    def __init__(self) -> None:
        self._lags_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._wall_start_s = 0.0
        self._cpu_start_s = 0.0

    async def __aenter__(self) -> ClientMonitor:
        self._wall_start_s = time.perf_counter()
        self._cpu_start_s = time.thread_time()
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.wall_s = time.perf_counter() - self._wall_start_s
        self.cpu_s = time.thread_time() - self._cpu_start_s
        if self._task is not None:
            self._task.cancel()

    async def _tick(self) -> None:
        while True:
            expected_s = time.perf_counter() + TICK_S
            await asyncio.sleep(TICK_S)
            self._lags_ms.append(max(0.0, (time.perf_counter() - expected_s) * 1000.0))

    def result(self) -> ClientLoad:
        lags = self._lags_ms or [0.0]
        return ClientLoad(
            wall_s=self.wall_s,
            cpu_share=self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0,
            loop_lag_p99_ms=float(np.percentile(lags, 99)),
            loop_lag_max_ms=max(lags),
        )
