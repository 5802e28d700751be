"""The latency-model fit on synthetic samples with known parameters."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.fit import FitError, build_table, fit_latency_model, fit_prefill
from advisor.core.interpolate import interp_linear
from tests.advisor_tests.synthetic import Truth, synthetic_samples


def _low_columns(samples: Any) -> Any:
    low = [s for s in samples if s.concurrency == 1]
    return (
        np.array([s.prompt_tokens for s in low], dtype=float),
        np.array([s.ttft_ms for s in low]),
    )


def _model(truth: Truth, **kwargs: Any):
    return fit_latency_model(build_table(synthetic_samples(truth, **kwargs)))


def test_it_recovers_overhead_and_prefill_under_noise():
    truth = Truth(overhead_ms=35.0, prefill_ms_per_token=0.08)
    model = _model(truth, noise_sd_ms=3.0)
    assert model.prefill.overhead_ms == pytest.approx(35.0, abs=3.0)
    assert model.prefill.ms_per_token == pytest.approx(0.08, rel=0.03)
    assert not model.prefill.curvature_used


def test_it_ignores_gross_outliers():
    truth = Truth(overhead_ms=30.0, prefill_ms_per_token=0.05)
    model = _model(truth, outlier_share=0.15, seed=3)
    assert model.prefill.outliers >= 2
    assert model.prefill.overhead_ms == pytest.approx(30.0, abs=3.0)
    assert model.prefill.ms_per_token == pytest.approx(0.05, rel=0.05)


def test_a_least_squares_fit_would_be_pulled_by_those_outliers():
    """The outlier test above is only meaningful if the outliers do move a plain fit."""
    samples = [
        s
        for s in synthetic_samples(Truth(overhead_ms=30.0), outlier_share=0.15, seed=3)
        if s.concurrency == 1
    ]
    x = np.array([s.prompt_tokens for s in samples], dtype=float)
    y = np.array([s.ttft_ms for s in samples])
    slope, intercept = np.polyfit(x, y, 1)
    assert abs(slope - 0.05) / 0.05 > 0.2 or abs(intercept - 30.0) > 10.0


def test_it_adds_curvature_when_prefill_grows_faster_than_linearly():
    truth = Truth(prefill_ms_per_token=0.05, prefill_ms_per_token_sq=1e-5)
    model = _model(truth, prompt_lengths=(256, 1024, 4096, 8192))
    assert model.prefill.curvature_used
    assert model.prefill.ms_per_token_sq == pytest.approx(1e-5, rel=0.1)
    assert model.prefill.prefill_ms(8000) == pytest.approx(truth.prefill_ms(8000), rel=0.02)


def test_it_keeps_a_straight_line_when_the_data_are_straight():
    for seed in range(5):
        model = _model(Truth(), prompt_lengths=(256, 1024, 4096, 8192), seed=seed)
        assert not model.prefill.curvature_used, seed


def test_short_prompts_on_a_memory_bound_floor_do_not_bend_the_line():
    # 64 tokens x 0.03 ms = 2 ms of compute, but the pass still reads every weight: 10 ms.
    truth = Truth(overhead_ms=20.0, prefill_ms_per_token=0.03, prefill_floor_ms=10.0)
    lengths = (64, 512, 2048)
    model = _model(truth, prompt_lengths=lengths, concurrencies=(1,))
    assert model.prefill.floor_lengths == 1
    assert model.prefill.overhead_ms == pytest.approx(20.0, abs=2.0)
    assert model.prefill.ms_per_token == pytest.approx(0.03, rel=0.05)
    assert model.prefill.prefill_ms(64) == pytest.approx(10.0, abs=2.0)
    # What a straight line through all three lengths would have said:
    straight = fit_prefill(
        *_low_columns(synthetic_samples(truth, prompt_lengths=lengths, concurrencies=(1,))),
        floor_lengths=0,
    )
    assert straight.overhead_ms - 20.0 > 4.0
    assert straight.prefill_ms(1024) < 0.9 * truth.prefill_ms(1024)


def test_no_floor_is_invented_for_a_straight_line():
    for seed in range(5):
        model = _model(Truth(), prompt_lengths=(64, 512, 2048, 8192), seed=seed)
        assert model.prefill.floor_lengths == 0, seed


def test_missing_usage_falls_back_to_target_lengths_and_says_so():
    samples = synthetic_samples(Truth(prefill_ms_per_token=0.1), missing_usage=True)
    table = build_table(samples)
    assert table.prompt_tokens_estimated == len(samples)
    model = fit_latency_model(table)
    assert model.prefill.ms_per_token == pytest.approx(0.1, rel=0.05)


def test_queue_and_tpot_follow_concurrency_and_context():
    truth = Truth(slots=4, tpot_ms_per_1k_context=2.0)
    model = _model(truth, concurrencies=(1, 4, 16))
    assert model.queue_ms_at(4, 1024) == pytest.approx(0.0, abs=3.0)
    assert model.queue_ms_at(16, 1024) == pytest.approx(truth.queue_ms(16, 1024, 64), rel=0.05)
    for c in (1, 4, 16):
        assert model.tpot_ms_at(c, 2000) == pytest.approx(truth.tpot(c, 2000), rel=0.05)
    assert model.tpot_ms_at(1, 4000) > model.tpot_ms_at(1, 128) + 5.0


def test_between_measured_concurrencies_the_queue_follows_the_slots_not_a_straight_line():
    truth = Truth(slots=4)
    model = _model(truth, concurrencies=(1, 2, 16))
    straight_line_at_3 = model.queue_ms_at(16, 1024) / 14
    assert straight_line_at_3 > 100
    assert model.queue_ms_at(3, 1024) == pytest.approx(0.0, abs=10.0)
    assert model.queue_ms_at(8, 1024) == pytest.approx(truth.queue_ms(8, 1024, 64), rel=0.1)


def test_the_queue_is_rescaled_to_the_requests_own_slot_time():
    truth = Truth(slots=4)
    model = _model(truth, concurrencies=(1, 4, 16), output_tokens=64)
    predicted = model.queue_ms_at(16, 1024, prefill_ms=truth.prefill_ms(1024), decode_steps=199)
    assert predicted == pytest.approx(truth.queue_ms(16, 1024, 200), rel=0.05)


def test_the_saturation_knee_is_where_throughput_stops_growing():
    truth = Truth(slots=8, batch_slope=0.0)
    model = _model(truth, concurrencies=(1, 2, 4, 8, 16, 32))
    assert model.saturation_concurrency(1024) == 8
    unsaturated = _model(Truth(slots=64), concurrencies=(1, 4, 16))
    assert unsaturated.saturation_concurrency(1024) is None


def test_one_prompt_length_cannot_be_fitted():
    with pytest.raises(FitError, match="two prompt lengths"):
        fit_prefill(np.array([100.0, 100.0, 100.0]), np.array([10.0, 11.0, 12.0]))


def test_interpolation_extends_end_segments_and_skips_unmeasured_points():
    assert interp_linear([1, 4], [10, 40], 2) == pytest.approx(20)
    assert interp_linear([1, 4], [10, 40], 6) == pytest.approx(60)
    assert interp_linear([1, 4, 8], [10, math.nan, 80], 4) == pytest.approx(40)
    assert interp_linear([3], [7], 100) == 7
    assert math.isnan(interp_linear([1, 2], [math.nan, math.nan], 1))


@settings(max_examples=25, deadline=None)
@given(
    overhead_ms=st.floats(1.0, 500.0),
    ms_per_token=st.floats(0.001, 1.0),
    seed=st.integers(0, 10_000),
)
def test_the_fit_recovers_any_straight_prefill_line(overhead_ms, ms_per_token, seed):
    truth = replace(Truth(), overhead_ms=overhead_ms, prefill_ms_per_token=ms_per_token)
    model = _model(truth, concurrencies=(1,), noise_sd_ms=0.5, seed=seed)
    prefill_ms = model.prefill.prefill_ms(1024)
    assert prefill_ms == pytest.approx(truth.prefill_ms(1024), rel=0.1, abs=1.0)
    assert model.prefill.overhead_ms == pytest.approx(overhead_ms, abs=2.0)
