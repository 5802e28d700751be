"""Diagnosis, refusal rules, levers and report blocks on synthetic runs with known parameters."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from advisor.core.advise import advise, advise_run, bottleneck_confidence
from advisor.core.diagnosis import Breakdown
from advisor.core.limits import DeclaredError
from advisor.core.samples import CacheProbe, Declared, Slo
from advisor.core.workload import Workload, WorkloadError
from tests.advisor_tests.synthetic import Truth, drop_successes, synthetic_samples

FAST: dict[str, Any] = {"resamples": 60}

DECODE_HEAVY = Truth(overhead_ms=20, prefill_ms_per_token=0.02, tpot_ms=25, batch_slope=0.01)
PREFILL_HEAVY = Truth(overhead_ms=20, prefill_ms_per_token=1.0, tpot_ms=5)
QUEUE_HEAVY = Truth(slots=2, tpot_ms=5, prefill_ms_per_token=0.02)
OVERHEAD_HEAVY = Truth(overhead_ms=400, prefill_ms_per_token=0.01, tpot_ms=2)


def _blocks(truth: Truth, workload: Workload, **kwargs: Any) -> dict:
    samples = synthetic_samples(truth, seed=kwargs.pop("seed", 0))
    return advise(samples, workload=workload, **{**FAST, **kwargs}).to_report_blocks()


@pytest.mark.parametrize(
    ("truth", "concurrency", "bottleneck", "top_lever"),
    [
        (DECODE_HEAVY, 1, "decode", "quantization"),
        (PREFILL_HEAVY, 1, "prefill", "shorter_prompt"),
        (QUEUE_HEAVY, 16, "queueing", "scale_out"),
        (OVERHEAD_HEAVY, 1, "overhead", "reduce_overhead"),
    ],
)
def test_it_names_the_bottleneck_and_the_lever_that_moves_it(
    truth, concurrency, bottleneck, top_lever
):
    workload = Workload(prompt_tokens=1024, output_tokens=64, concurrency=concurrency)
    blocks = _blocks(truth, workload)
    diagnosis = blocks["diagnosis"]
    assert diagnosis["bottleneck"] == bottleneck
    assert diagnosis["confidence"] >= 0.9
    assert diagnosis["reasons"] == []
    assert blocks["recommendations"][0]["lever"] == top_lever


def test_the_breakdown_matches_the_known_parts_at_the_workloads_own_point():
    truth = Truth(tpot_ms_per_1k_context=2.0, slots=4)
    for prompt_tokens, concurrency in ((300, 1), (3000, 10)):
        workload = Workload(prompt_tokens=prompt_tokens, output_tokens=100, concurrency=concurrency)
        parts = _blocks(truth, workload)["diagnosis"]["breakdown_ms"]
        assert parts["overhead"] == pytest.approx(truth.overhead_ms, abs=3.0)
        assert parts["prefill"] == pytest.approx(truth.prefill_ms(prompt_tokens), rel=0.1)
        expected_queue = truth.queue_ms(concurrency, prompt_tokens, 100)
        assert parts["queueing"] == pytest.approx(expected_queue, abs=10.0, rel=0.1)
        expected_decode = 99 * truth.tpot(concurrency, prompt_tokens)
        assert parts["decode"] == pytest.approx(expected_decode, rel=0.05)


def test_too_few_prompt_lengths_is_insufficient_data():
    samples = synthetic_samples(Truth(), prompt_lengths=(128, 1024))
    result = advise(samples, workload=Workload(prompt_tokens=512), **FAST)
    blocks = result.to_report_blocks()
    assert blocks["diagnosis"]["bottleneck"] == "insufficient_data"
    assert [r["code"] for r in blocks["diagnosis"]["reasons"]] == ["too_few_prompt_lengths"]
    assert blocks["recommendations"] == []
    assert "no verdict" in result.summary_lines()[0]


def test_too_few_successes_at_a_used_point_is_insufficient_data():
    samples = drop_successes(synthetic_samples(Truth()), concurrency=4, keep=4)
    blocks = advise(samples, workload=Workload(concurrency=4), **FAST).to_report_blocks()
    codes = {r["code"] for r in blocks["diagnosis"]["reasons"]}
    assert codes == {"too_few_samples"}
    healthy = advise(synthetic_samples(Truth()), workload=Workload(concurrency=4), **FAST)
    assert healthy.to_report_blocks()["diagnosis"]["reasons"] == []


@pytest.mark.parametrize(
    ("workload", "code"),
    [
        (Workload(concurrency=25), "concurrency_out_of_range"),
        (Workload(prompt_tokens=7000), "prompt_tokens_out_of_range"),
    ],
)
def test_a_workload_beyond_one_and_a_half_times_the_measured_range_is_refused(workload, code):
    blocks = advise(synthetic_samples(Truth()), workload=workload, **FAST).to_report_blocks()
    assert blocks["diagnosis"]["bottleneck"] == "insufficient_data"
    assert code in {r["code"] for r in blocks["diagnosis"]["reasons"]}
    inside = (
        replace(workload, concurrency=12) if workload.concurrency else Workload(prompt_tokens=4096)
    )
    inside_blocks = advise(synthetic_samples(Truth()), workload=inside, **FAST)
    assert inside_blocks.to_report_blocks()["diagnosis"]["reasons"] == []


def test_two_parts_too_close_to_call_give_low_confidence():
    # prefill(1024) = 1024 x 0.06 = 61 ms; decode = 15 x 4.1 = 61.5 ms
    truth = Truth(overhead_ms=5, prefill_ms_per_token=0.06, tpot_ms=4.1, tpot_ms_per_1k_context=0)
    samples = synthetic_samples(truth, output_tokens=16, noise_sd_ms=4.0, tpot_noise_sd_ms=0.4)
    result = advise(samples, workload=Workload(prompt_tokens=1024, output_tokens=16), seed=1)
    diagnosis = result.to_report_blocks()["diagnosis"]
    assert diagnosis["confidence"] < 0.6
    assert diagnosis["bottleneck"] == "insufficient_data"
    assert "low_confidence" in {r["code"] for r in diagnosis["reasons"]}


def test_an_invalid_run_gets_no_verdict():
    blocks = advise(synthetic_samples(Truth()), run_valid=False, **FAST).to_report_blocks()
    assert blocks["diagnosis"]["valid"] is False
    assert blocks["diagnosis"]["bottleneck"] == "invalid_run"
    assert blocks["recommendations"] == []


def test_no_successful_request_is_insufficient_data_not_a_crash():
    samples = [replace(s, outcome="error", ttft_ms=None) for s in synthetic_samples(Truth())]
    blocks = advise(samples, **FAST).to_report_blocks()
    assert blocks["diagnosis"]["bottleneck"] == "insufficient_data"
    assert blocks["latency_model"] is None
    json.dumps(blocks, allow_nan=False)


def test_a_caching_server_moves_prompt_caching_to_already_applied():
    workload = Workload(prompt_tokens=2048, output_tokens=32, shared_prefix_tokens=1536)
    truth = PREFILL_HEAVY
    cold = truth.overhead_ms + truth.prefill_ms(2048)
    caching = CacheProbe(server_caches=True, cold_ttft_ms=cold, warm_ttft_ms=25.0)
    blocks = _blocks(truth, workload, cache_probe=caching)
    levers = [r["lever"] for r in blocks["recommendations"]]
    assert "prompt_caching" not in levers
    applied = blocks["diagnosis"]["already_applied"]
    assert [a["lever"] for a in applied] == ["prompt_caching"]
    assert applied[0]["measured_saving_ms"] == pytest.approx(cold - 25.0)
    assert applied[0]["expected_saving_ms"] == pytest.approx(truth.prefill_ms(1536), rel=0.1)
    # The breakdown already counts the cached prefix as cached.
    prefill = blocks["diagnosis"]["breakdown_ms"]["prefill"]
    assert prefill == pytest.approx(truth.prefill_ms(512), rel=0.1)

    not_caching = CacheProbe(server_caches=False, cold_ttft_ms=cold, warm_ttft_ms=cold)
    blocks = _blocks(truth, workload, cache_probe=not_caching)
    top = blocks["recommendations"][0]
    assert top["lever"] == "prompt_caching"
    assert top["expected_saving_ms"] == pytest.approx(truth.prefill_ms(1536), rel=0.1)
    assert blocks["diagnosis"]["already_applied"] == []


def test_managed_api_recommends_only_what_anyone_can_apply():
    workload = Workload(prompt_tokens=1024, output_tokens=64, serving="managed_api")
    blocks = _blocks(DECODE_HEAVY, workload)
    levers = {r["lever"] for r in blocks["recommendations"]}
    assert levers.isdisjoint({"batching", "quantization", "speculative_decoding", "scale_out"})
    assert "output_cap" in levers
    questions = {q["lever"] for q in blocks["diagnosis"]["provider_questions"]}
    assert {"quantization", "batching"} <= questions


def test_batching_names_the_concurrency_where_tpot_stays_flat():
    truth = Truth(slots=64, batch_slope=0.005)
    workload = Workload(prompt_tokens=1024, output_tokens=64, concurrency=1)
    blocks = _blocks(truth, workload)
    batching = next(r for r in blocks["recommendations"] if r["lever"] == "batching")
    assert batching["recommended_concurrency"] == 16
    assert batching["throughput_change_pct"] > 500
    assert batching["expected_saving_ms"] < 0

    steep = Truth(slots=64, batch_slope=0.2)
    blocks = _blocks(steep, workload)
    batching = next(r for r in blocks["recommendations"] if r["lever"] == "batching")
    assert batching["recommended_concurrency"] == 1


def test_objective_throughput_puts_throughput_first_within_the_slos():
    truth = Truth(slots=64, batch_slope=0.05)
    workload = Workload(prompt_tokens=1024, output_tokens=64, objective="throughput")
    blocks = _blocks(truth, workload)
    assert blocks["recommendations"][0]["lever"] == "batching"
    assert blocks["recommendations"][0]["recommended_concurrency"] == 16
    tight = Slo(tpot_ms=truth.tpot(4, 1024) + 0.3)
    blocks = _blocks(truth, workload, slo=tight)
    batching = next(r for r in blocks["recommendations"] if r["lever"] == "batching")
    assert batching["recommended_concurrency"] == 4


def test_slo_status_per_phase():
    slo = Slo(ttft_ms=100.0, tpot_ms=10.0)
    blocks = _blocks(DECODE_HEAVY, Workload(prompt_tokens=1024), slo=slo)
    status = blocks["diagnosis"]["slo"]
    assert status["ttft"]["met"] is True
    assert status["tpot"]["met"] is False
    assert status["tpot"]["predicted_ms"] > 25


def test_roofline_says_decode_needs_bandwidth_not_flops():
    declared = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="bf16")
    # 8B bf16 on H100: ~16 GB per step / 3.35 TB/s = ~4.8 ms at peak; 25 ms is far below.
    blocks = _blocks(DECODE_HEAVY, Workload(prompt_tokens=1024), declared=declared)
    roofline = blocks["diagnosis"]["roofline"]
    assert roofline["min_tpot_ms"] == pytest.approx(4.9, rel=0.1)
    assert roofline["mbu"] == pytest.approx(roofline["min_tpot_ms"] / 25.4, rel=0.1)
    assert roofline["decode_verdict"] == "far_below"
    assert "more FLOP/s will not help" in roofline["advice"]
    quantization = next(r for r in blocks["recommendations"] if r["lever"] == "quantization")
    assert quantization["evidence"]["basis"].startswith("roofline")
    smaller = next(r for r in blocks["recommendations"] if r["lever"] == "smaller_model")
    assert smaller["evidence"]["smaller_model"] == "llama-3.2-1b"


def test_unknown_declarations_and_bad_workloads_are_clear_errors():
    with pytest.raises(DeclaredError, match="unknown hardware 'tpu9'"):
        advise(synthetic_samples(Truth()), declared=Declared("tpu9", "llama-3.1-8b", "bf16"))
    with pytest.raises(WorkloadError, match="concurrency must be at least 1"):
        Workload(concurrency=0)


def test_report_blocks_have_the_public_fields_and_serialise():
    result = advise(synthetic_samples(Truth()), workload=Workload(concurrency=4), **FAST)
    blocks = result.to_report_blocks()
    json.dumps(blocks, allow_nan=False)
    assert set(blocks) == {"latency_model", "diagnosis", "recommendations"}
    model = blocks["latency_model"]
    for key in (
        "overhead_ms",
        "prefill_tokens_per_s",
        "tpot_ms",
        "tpot_ms_by_concurrency",
        "queue_ms_by_concurrency",
        "saturation_concurrency",
        "ci95",
        "fit_quality",
        "connect_ms_p50",
        "new_connection_share",
    ):
        assert key in model, key
    assert set(model["tpot_ms_by_concurrency"]) == {"1", "4", "16"}
    lo, hi = model["ci95"]["overhead_ms"]
    assert lo <= model["overhead_ms"] <= hi
    diagnosis = blocks["diagnosis"]
    for key in (
        "valid",
        "bottleneck",
        "ttft_bottleneck",
        "breakdown_ms",
        "workload",
        "confidence",
        "reasons",
        "already_applied",
        "roofline",
    ):
        assert key in diagnosis, key
    assert set(diagnosis["workload"]) >= {
        "prompt_tokens",
        "output_tokens",
        "concurrency",
        "objective",
        "serving",
    }
    for item in blocks["recommendations"]:
        assert set(item) >= {
            "lever",
            "expected_saving_ms",
            "saving_share",
            "throughput_change_pct",
            "confidence",
            "evidence",
            "how",
        }


def test_reasoning_models_report_thinking_and_ttfa():
    truth = Truth(reasoning_ms=600.0, tpot_ms=10)
    blocks = _blocks(truth, Workload(prompt_tokens=1024, output_tokens=200))
    parts = blocks["diagnosis"]["breakdown_ms"]
    assert parts["reasoning"] == pytest.approx(600.0, rel=0.05)
    ttft = parts["overhead"] + parts["queueing"] + parts["prefill"]
    assert parts["ttfa"] == pytest.approx(ttft + 600.0, rel=0.02)
    assert "reasoning_budget" in {r["lever"] for r in blocks["recommendations"]}


def test_the_summary_says_slow_to_start_or_slow_to_write():
    samples = synthetic_samples(DECODE_HEAVY)
    lines = advise(samples, workload=Workload(prompt_tokens=1024), **FAST).summary_lines()
    assert lines[0].startswith("Advisor: decode-bound (slow to write)")
    assert any(line.startswith("  1. quantization") for line in lines)


def test_with_a_queue_a_shorter_answer_also_shortens_the_wait():
    workload = Workload(prompt_tokens=1024, output_tokens=64, concurrency=16)
    blocks = _blocks(QUEUE_HEAVY, workload)
    output_cap = next(r for r in blocks["recommendations"] if r["lever"] == "output_cap")
    direct_ms = 16 * QUEUE_HEAVY.tpot(16, 1024)
    queue_cut_ms = QUEUE_HEAVY.queue_ms(16, 1024, 64) - QUEUE_HEAVY.queue_ms(16, 1024, 48)
    assert queue_cut_ms > direct_ms
    assert output_cap["expected_saving_ms"] == pytest.approx(direct_ms + queue_cut_ms, rel=0.1)


def test_roofline_tells_near_the_limit_from_far_below():
    declared = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="bf16")
    fast = Truth(overhead_ms=20, prefill_ms_per_token=0.2, tpot_ms=5.5, tpot_ms_per_1k_context=0)
    blocks = _blocks(fast, Workload(prompt_tokens=1024), declared=declared)
    roofline = blocks["diagnosis"]["roofline"]
    assert roofline["decode_verdict"] == "near_limit"
    assert roofline["mbu"] > 0.8
    assert "near the limit" in roofline["advice"]
    # 1024 tokens x 16 GFLOP = 16 TFLOP: ~17 ms at 989 TFLOP/s, so 205 ms is ~8% MFU.
    assert roofline["mfu"] == pytest.approx(0.08, abs=0.02)
    assert roofline["prefill_verdict"] == "far_below"


def test_declared_devices_add_up_their_peaks_in_the_roofline():
    fast = Truth(overhead_ms=20, prefill_ms_per_token=0.2, tpot_ms=5.5, tpot_ms_per_1k_context=0)
    workload = Workload(prompt_tokens=1024)
    one = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="bf16")
    two = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="bf16", devices=2)
    single = _blocks(fast, workload, declared=one)["diagnosis"]["roofline"]
    split = _blocks(fast, workload, declared=two)["diagnosis"]["roofline"]
    assert (single["devices_assumed"], split["devices_assumed"]) == (1, 2)
    assert split["min_tpot_ms"] == pytest.approx(single["min_tpot_ms"] / 2, rel=0.01)
    assert split["mbu"] == pytest.approx(single["mbu"] / 2, rel=0.01)
    with pytest.raises(DeclaredError, match="devices"):
        _blocks(fast, workload, declared=replace(two, devices=0))


def test_advise_run_reads_validity_and_the_cache_probe_from_the_report():
    samples = synthetic_samples(PREFILL_HEAVY)
    workload = Workload(prompt_tokens=1024, shared_prefix_tokens=512)
    report = {"valid": True, "cache_probe": {"server_caches": True, "cold_ttft_ms": 900.0}}
    blocks = advise_run(samples, report, workload=workload).to_report_blocks()
    assert [a["lever"] for a in blocks["diagnosis"]["already_applied"]] == ["prompt_caching"]
    invalid = advise_run(samples, {"valid": False, "cache_probe": None}, workload=workload)
    assert invalid.to_report_blocks()["diagnosis"]["bottleneck"] == "invalid_run"


def test_confidence_counts_the_models_own_error_not_only_sampling_noise():
    def parts(decode_ms: float) -> Breakdown:
        return Breakdown(
            overhead_ms=10,
            queueing_ms=100,
            prefill_ms=5,
            decode_ms=decode_ms,
            tpot_ms=1,
            reasoning_ms=0,
        )

    # Two hundred identical resamples: sampling noise alone would say 100%.
    close = bottleneck_confidence("decode", [parts(102)] * 200, 200, seed=0)
    clear = bottleneck_confidence("decode", [parts(130)] * 200, 200, seed=0)
    assert 0.3 < close < 0.75
    assert clear > 0.97
    assert bottleneck_confidence("decode", [parts(130)] * 100, 200, seed=0) < 0.55


def _quantization(blocks: dict) -> dict | None:
    return next((r for r in blocks["recommendations"] if r["lever"] == "quantization"), None)


def test_quantization_is_conditional_without_a_declared_dtype_and_spent_at_int4() -> None:
    undeclared = _quantization(_blocks(Truth(), Workload(prompt_tokens=512)))
    assert undeclared is not None
    assert undeclared["how"].startswith("If the weights are 16-bit")
    declared_int4 = Declared(hardware="h100-sxm", model="llama-3.1-8b", dtype="int4")
    blocks = _blocks(Truth(), Workload(prompt_tokens=512), declared=declared_int4)
    assert _quantization(blocks) is None
