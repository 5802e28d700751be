"""Load patterns: concurrency caps, Poisson arrivals with client delay, warm-up, early stops."""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest

from benchmarks.harness.loadgen import ClientMonitor, run_load


class FakeServer:
    """Stands in for the network: each request takes `service_s`; records in-flight peaks."""

    def __init__(self, service_s: float) -> None:
        self.service_s = service_s
        self.in_flight = 0
        self.peak = 0
        self.calls: list[tuple[int, bool, int, int]] = []  # index, warmup, due ns, started ns

    async def send(self, index: int, warmup: bool, scheduled_ns: int) -> None:
        self.calls.append((index, warmup, scheduled_ns, time.perf_counter_ns()))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(self.service_s)
        self.in_flight -= 1


def test_closed_loop_holds_concurrency_and_counts_warmup_apart() -> None:
    server = FakeServer(0.01)
    asyncio.run(run_load(server.send, concurrency=4, requests=12, warmup=4))
    assert server.peak == 4
    assert [warmup for _, warmup, _, _ in server.calls] == [True] * 4 + [False] * 12
    measured = [index for index, warmup, _, _ in server.calls if not warmup]
    assert sorted(measured) == list(range(12))


def test_closed_loop_slots_go_straight_from_warmup_to_measured_requests() -> None:
    """No barrier after warm-up: a slot whose warm-up request is done starts measuring while the
    other slots are still warming up."""
    starts: dict[tuple[bool, int], int] = {}
    ends: dict[tuple[bool, int], int] = {}

    async def send(index: int, warmup: bool, scheduled_ns: int) -> None:
        starts[warmup, index] = time.perf_counter_ns()
        await asyncio.sleep(0.005 if (warmup and index == 0) else 0.05)
        ends[warmup, index] = time.perf_counter_ns()

    asyncio.run(run_load(send, concurrency=2, requests=2, warmup=2))
    assert starts[False, 0] < ends[True, 1]


def test_open_loop_arrivals_follow_the_rate() -> None:
    server = FakeServer(0.001)
    started = time.perf_counter()
    asyncio.run(run_load(server.send, concurrency=50, requests=40, rate_per_s=200.0, seed=1))
    elapsed_s = time.perf_counter() - started
    assert len(server.calls) == 40
    assert 0.08 < elapsed_s < 1.5  # 40 arrivals at 200/s: about 0.2 s
    dues = [due for _, _, due, _ in server.calls]
    assert dues == sorted(dues)
    late_ms = [(start - due) / 1e6 for _, _, due, start in server.calls]
    assert statistics.median(late_ms) < 20


def test_open_loop_shows_client_delay_when_the_cap_is_reached() -> None:
    server = FakeServer(0.05)  # one slot, 50 ms each, arrivals every 10 ms: falls behind
    asyncio.run(run_load(server.send, concurrency=1, requests=6, rate_per_s=100.0, seed=2))
    late_ms = [(start - due) / 1e6 for _, _, due, start in server.calls]
    assert server.peak == 1
    assert late_ms[-1] > 100


def test_a_duration_stops_a_point_early() -> None:
    server = FakeServer(0.02)
    started = time.perf_counter()
    asyncio.run(run_load(server.send, concurrency=2, requests=10_000, duration_s=0.2))
    assert time.perf_counter() - started < 1.0
    assert 4 <= len(server.calls) <= 30  # about 20


def test_load_can_be_cancelled_from_outside() -> None:
    server = FakeServer(0.05)

    async def main() -> None:
        task = asyncio.create_task(run_load(server.send, concurrency=2, requests=1000))
        await asyncio.sleep(0.12)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert 2 <= len(server.calls) <= 10


def test_the_monitor_sees_a_blocked_event_loop() -> None:
    async def main(block_s: float) -> float:
        async with ClientMonitor() as monitor:
            await asyncio.sleep(0.03)
            time.sleep(block_s)  # the client hogging its loop
            await asyncio.sleep(0.03)
        return monitor.result().loop_lag_max_ms

    assert asyncio.run(main(0.1)) >= 80
    assert asyncio.run(main(0.0)) < 60


def test_the_monitor_measures_the_loop_threads_cpu() -> None:
    async def main(*, busy: bool) -> float:
        async with ClientMonitor() as monitor:
            if busy:
                deadline = time.thread_time() + 0.1
                while time.thread_time() < deadline:
                    pass
            else:
                await asyncio.sleep(0.1)
        return monitor.result().cpu_share

    # Bounds loose enough for a shared two-core machine: a spinning loop holds the CPU for
    # most of the wall time even when another process takes a share of it; a sleeping one not.
    assert asyncio.run(main(busy=True)) > 0.3
    assert asyncio.run(main(busy=False)) < 0.2
