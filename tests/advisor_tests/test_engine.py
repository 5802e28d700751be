"""The shared-engine model: its algebra, its fit, and lever prices against the simulator's engine.

The last tests sweep the simulator's scheduler in virtual time (tests/advisor_tests/virtual.py),
apply each lever there, and hold the advisor's promise to what the engine then measures.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.advise import advise
from advisor.core.engine import EngineFit, EnginePoint, closed_loop_e2e_ms, fit_engine
from advisor.core.samples import CacheProbe, Declared
from advisor.core.workload import Workload
from simulator.profile import PRESETS, Profile
from tests.advisor_tests.virtual import mean_e2e_ms, point_plan, sweep_samples

BASE = dataclasses.replace(
    PRESETS["llama-8b-h100"], request_overhead_ms=8.0, step_overhead_ms=1.0, mbu=0.85
)
WORK = {"decode_steps": 31.0, "tpot_alone_ms": 5.0}


@settings(max_examples=200, deadline=None)
@given(
    overhead_ms=st.floats(0.0, 80.0),
    slots=st.sampled_from([1.0, 2.0, 3.0, 4.0, 64.0, math.inf]),
    interference=st.floats(0.0, 1.0),
    growth=st.floats(0.0, 0.2),
    concurrency=st.sampled_from([1, 2, 3, 4, 8, 16]),
    prefill_ms=st.floats(0.0, 500.0),
    steps=st.integers(0, 256),
    tpot_ms=st.floats(0.5, 40.0),
)
def test_the_scalar_model_is_the_vectorised_one(
    overhead_ms: float,
    slots: float,
    interference: float,
    growth: float,
    concurrency: int,
    prefill_ms: float,
    steps: int,
    tpot_ms: float,
) -> None:
    fit = EngineFit(overhead_ms, slots, interference, growth)
    work = {"prefill_ms": prefill_ms, "decode_steps": float(steps), "tpot_alone_ms": tpot_ms}
    vector = closed_loop_e2e_ms(
        concurrency=concurrency,
        overhead_ms=overhead_ms,
        slots=np.array([slots]),
        interference=np.array([interference]),
        batch_growth=np.array([growth]),
        **work,
    )[0]
    assert fit.e2e_ms(concurrency=concurrency, **work) == pytest.approx(vector, rel=1e-9)


def test_alone_a_request_is_its_own_work() -> None:
    fit = EngineFit(overhead_ms=10.0, slots=4.0, interference=1.0, batch_growth=0.05)
    assert fit.e2e_ms(concurrency=1, prefill_ms=50.0, **WORK) == pytest.approx(10 + 50 + 155)
    assert fit.wait_ms(concurrency=1, prefill_ms=50.0, **WORK) == pytest.approx(0.0)


def test_full_slots_make_the_closed_loop_wait() -> None:
    fit = EngineFit(overhead_ms=10.0, slots=2.0)
    # A request holds a slot for 50 + 31 x 5 = 205 ms; 8 clients share 2 slots.
    assert fit.e2e_ms(concurrency=8, prefill_ms=50.0, **WORK) == pytest.approx(8 * 205 / 2)
    assert fit.e2e_ms(concurrency=2, prefill_ms=50.0, **WORK) == pytest.approx(10 + 205)


def test_on_a_busy_shared_engine_every_request_waits_for_every_prefill() -> None:
    fit = EngineFit(overhead_ms=0.0, interference=1.0)
    assert fit.e2e_ms(concurrency=4, prefill_ms=50.0, **WORK) == pytest.approx(4 * 50 + 155)
    assert fit.wait_ms(concurrency=4, prefill_ms=50.0, **WORK) == pytest.approx(3 * 50)


def test_a_long_overhead_spreads_the_neighbours_out() -> None:
    busy = EngineFit(overhead_ms=0.0, interference=1.0)
    idle = EngineFit(overhead_ms=2000.0, interference=1.0)
    busy_wait = busy.wait_ms(concurrency=4, prefill_ms=50.0, **WORK)
    idle_wait = idle.wait_ms(concurrency=4, prefill_ms=50.0, **WORK)
    assert 0 < idle_wait < busy_wait / 5


@pytest.mark.parametrize(
    ("slots", "interference"), [(2.0, 0.0), (4.0, 0.0), (math.inf, 1.0), (2.0, 1.0)]
)
def test_the_fit_finds_the_engine_that_made_the_latencies(
    slots: float, interference: float
) -> None:
    truth = EngineFit(overhead_ms=12.0, slots=slots, interference=interference, batch_growth=0.01)
    points = []
    for c in (4, 8):
        for prompt in (64, 512, 2048):
            work = {"prefill_ms": 0.05 * prompt, "decode_steps": 31.0, "tpot_alone_ms": 6.0}
            points.append(EnginePoint(c, e2e_ms=truth.e2e_ms(concurrency=c, **work), **work))
    growth = [(c, 1 + 0.01 * (min(c, slots) - 1)) for c in (4.0, 8.0)]
    fit = fit_engine(12.0, points, growth)
    assert fit.slots == slots
    assert fit.interference == pytest.approx(interference, abs=0.05)
    assert fit.batch_growth == pytest.approx(0.01, rel=0.01)
    assert fit.rms_log_error < 0.01


def _promises(profile: Profile, workload: Workload, **more: Any) -> dict[str, dict[str, Any]]:
    samples = sweep_samples(
        profile,
        prompt_lengths=(64, 512, 2048),
        concurrencies=(1, 4, 8),
        output_tokens=workload.output_tokens or 32,
    )
    result = advise(samples, workload=workload, cache_probe=CacheProbe(server_caches=False), **more)
    blocks = result.to_report_blocks()
    assert blocks["diagnosis"]["bottleneck"] not in ("insufficient_data", "invalid_run")
    return {r["lever"]: r for r in blocks["recommendations"]}


@pytest.mark.parametrize("slots", [64, 2])
def test_at_concurrency_8_levers_save_what_the_engine_then_measures(slots: int) -> None:
    profile = dataclasses.replace(BASE, max_batch_size=slots)
    promised = _promises(profile, Workload(prompt_tokens=1500, output_tokens=32, concurrency=8))
    before_ms = mean_e2e_ms(profile, point_plan(8, 1500, 32))
    measured = {
        "shorter_prompt": before_ms - mean_e2e_ms(profile, point_plan(8, 1125, 32)),
        "output_cap": before_ms - mean_e2e_ms(profile, point_plan(8, 1500, 24)),
        "scale_out": before_ms - mean_e2e_ms(profile, point_plan(4, 1500, 32)),
    }
    for lever, saving_ms in measured.items():
        assert promised[lever]["expected_saving_ms"] == pytest.approx(saving_ms, rel=0.25), lever
    # The neighbours' prefills are most of it: the request's own prefill saving is far less.
    own_ms = promised["shorter_prompt"]["evidence"]["prefill_saving_ms"]
    assert measured["shorter_prompt"] > 2.5 * own_ms


def test_a_shared_prefix_cached_saves_every_neighbours_prefill_too() -> None:
    profile = dataclasses.replace(BASE, max_batch_size=64)
    workload = Workload(
        prompt_tokens=1500, output_tokens=32, concurrency=4, shared_prefix_tokens=1000
    )
    promised = _promises(profile, workload)["prompt_caching"]
    plan = point_plan(4, 1500, 32, shared_prefix_tokens=1000)
    cached = dataclasses.replace(profile, prefix_cache=True)
    saving_ms = mean_e2e_ms(profile, plan) - mean_e2e_ms(cached, plan)
    assert promised["expected_saving_ms"] == pytest.approx(saving_ms, rel=0.25)
    assert saving_ms > 2 * promised["evidence"]["own_prefill_saving_ms"]


def test_quantization_shrinks_only_the_bandwidth_bound_share_of_tpot() -> None:
    declared = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="bf16")
    workload = Workload(prompt_tokens=1000, output_tokens=32, concurrency=1)
    # 2 ms a step that bytes do not set: TPOT 7.6 ms, as TensorRT-LLM's 7.2 ms on an H100.
    profile = dataclasses.replace(BASE, step_overhead_ms=2.0)
    promised = _promises(profile, workload, declared=declared)["quantization"]
    plan = point_plan(1, 1000, 32)
    int4 = dataclasses.replace(profile, weight_dtype="int4")
    saving_ms = mean_e2e_ms(profile, plan) - mean_e2e_ms(int4, plan)
    assert promised["expected_saving_ms"] == pytest.approx(saving_ms, rel=0.25)
    evidence = promised["evidence"]
    assert 0.5 < evidence["bandwidth_bound_share"] < 0.9
    # Scaling the whole TPOT by the bytes (a 4x smaller step) would promise too much.
    naive_ms = 31 * evidence["tpot_ms"] * 0.75
    assert naive_ms > 1.25 * saving_ms
