"""The closed loop in virtual time: what the harness would measure, without the wire."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.closedloop import LoopPlan, run_closed_loop
from simulator.engine import Arrival, simulate
from simulator.profile import PRESETS

BASE = dataclasses.replace(PRESETS["llama-8b-h100"], request_overhead_ms=10.0)


def test_one_client_sees_the_engine_alone_plus_the_overhead() -> None:
    requests = run_closed_loop(BASE, LoopPlan(1, 512, 32, requests=3))
    (alone,) = simulate(BASE, [Arrival(0.0, 512, 32)])
    assert [r.warmup for r in requests] == [True, False, False, False]
    for r in requests:
        assert r.ttft_ms == pytest.approx(10.0 + alone.ttft_s * 1000.0, rel=1e-9)
        assert r.e2e_ms == pytest.approx(10.0 + alone.token_times_s[-1] * 1000.0, rel=1e-9)
        assert r.tpot_ms == pytest.approx(alone.tpot_s * 1000.0, rel=1e-9)


def test_each_client_warms_up_once_then_the_measured_requests_are_shared_out() -> None:
    requests = run_closed_loop(BASE, LoopPlan(4, 256, 16, requests=10, front_jitter_ms=1.0))
    assert sum(r.warmup for r in requests) == 4
    assert sum(not r.warmup for r in requests) == 10
    assert {r.client for r in requests if r.warmup} == {0, 1, 2, 3}


def test_neighbours_prefills_slow_everyone_down() -> None:
    alone = run_closed_loop(BASE, LoopPlan(1, 2048, 32, requests=8))[-1]
    crowded = run_closed_loop(BASE, LoopPlan(8, 2048, 32, requests=40, front_jitter_ms=1.0))
    measured = [r for r in crowded if not r.warmup]
    mean_e2e_ms = sum(r.e2e_ms for r in measured) / len(measured)
    # 64 slots: nobody waits for a slot, yet the 7 neighbours' prefills land in every request.
    assert mean_e2e_ms > alone.e2e_ms + 3 * (alone.ttft_ms - 10.0)


def test_a_shared_prefix_is_served_from_the_cache_when_it_is_on() -> None:
    cached = dataclasses.replace(BASE, prefix_cache=True)
    plan = LoopPlan(2, 1024, 8, requests=6, shared_prefix_tokens=512)
    assert all(r.cached_tokens == 0 for r in run_closed_loop(BASE, plan))
    later = [r for r in run_closed_loop(cached, plan) if not r.warmup]
    assert all(r.cached_tokens == 512 for r in later)


def test_the_jitter_is_seeded() -> None:
    plan = LoopPlan(4, 512, 16, requests=12, front_jitter_ms=2.0, seed=7)
    assert run_closed_loop(BASE, plan) == run_closed_loop(BASE, plan)
    other = dataclasses.replace(plan, seed=8)
    assert run_closed_loop(BASE, plan) != run_closed_loop(BASE, other)


def test_a_plan_without_clients_or_requests_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        run_closed_loop(BASE, LoopPlan(0, 512, 16, requests=4))
    with pytest.raises(ValueError, match="at least 1"):
        run_closed_loop(BASE, LoopPlan(2, 512, 16, requests=0))
