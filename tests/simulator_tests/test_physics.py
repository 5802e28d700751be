"""Latency physics of the engine, run in virtual time: the properties the advisor relies on."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from advisor.core import roofline
from advisor.core.catalog import WeightDtype
from simulator.engine import Arrival, SimResult, block_hashes, simulate
from simulator.profile import PRESETS, Profile

BASE = PRESETS["llama-8b-h100"]


def alone(profile: Profile, prompt_tokens: int, output_tokens: int = 2) -> SimResult:
    (result,) = simulate(profile, [Arrival(0.0, prompt_tokens, output_tokens)])
    return result


def batch(profile: Profile, size: int, prompt_tokens: int, output_tokens: int) -> list[SimResult]:
    return simulate(profile, [Arrival(0.0, prompt_tokens, output_tokens) for _ in range(size)])


def test_it_makes_ttft_linear_in_prompt_tokens_for_short_prompts() -> None:
    ttft_s = {p: alone(BASE, p).ttft_s for p in (512, 1024, 1536, 2048)}
    first_slope = ttft_s[1024] - ttft_s[512]
    last_slope = ttft_s[2048] - ttft_s[1536]
    assert last_slope == pytest.approx(first_slope, rel=0.05)
    assert first_slope > 0


def test_it_makes_ttft_grow_faster_than_linearly_for_long_prompts() -> None:
    profile = dataclasses.replace(BASE, max_batched_tokens=0)  # one whole prefill per prompt
    short_per_token_s = (alone(profile, 1024).ttft_s - alone(profile, 512).ttft_s) / 512
    long_per_token_s = (alone(profile, 65_536).ttft_s - alone(profile, 32_768).ttft_s) / 32_768
    assert long_per_token_s > 1.5 * short_per_token_s


def test_it_makes_tpot_proportional_to_bytes_per_parameter_when_memory_bound() -> None:
    def tpot_s(weight_dtype: WeightDtype) -> float:
        profile = dataclasses.replace(BASE, weight_dtype=weight_dtype, step_overhead_ms=0.0)
        return alone(profile, 16, output_tokens=64).tpot_s

    assert tpot_s("bf16") / tpot_s("int4") == pytest.approx(4.0, rel=0.03)
    assert tpot_s("bf16") / tpot_s("fp8") == pytest.approx(2.0, rel=0.03)


def test_it_makes_tpot_grow_with_context_by_the_kv_cache_read() -> None:
    short = alone(BASE, 100, output_tokens=32).tpot_s
    long = alone(BASE, 32_100, output_tokens=32).tpot_s
    deployment = BASE.deployment
    expected_extra_s = (
        roofline.kv_bytes_per_token(BASE.model, BASE.kv_dtype) * 32_000 / deployment.bytes_per_s
    )
    assert long - short == pytest.approx(expected_extra_s, rel=0.05)


def test_it_keeps_tpot_flat_then_rising_as_the_batch_grows() -> None:
    profile = dataclasses.replace(BASE, max_batch_size=1024, max_batched_tokens=32_768)

    def tpot_s(size: int) -> float:
        return batch(profile, size, prompt_tokens=16, output_tokens=32)[0].tpot_s

    one = tpot_s(1)
    assert tpot_s(8) < 1.05 * one
    assert tpot_s(32) < 1.10 * one
    assert tpot_s(768) > 2.0 * one


def test_it_cuts_ttft_by_the_cached_share_of_the_prompt() -> None:
    profile = PRESETS["llama-8b-h100-cache"]
    shared = [f"s{i}" for i in range(2048)]
    first = shared + [f"a{i}" for i in range(2048)]
    second = shared + [f"b{i}" for i in range(2048)]
    results = simulate(
        profile,
        [
            Arrival(0.0, len(first), 2, block_hashes(first)),
            Arrival(10.0, len(second), 2, block_hashes(second)),
        ],
    )
    assert results[0].cached_tokens == 0
    assert results[1].cached_tokens == 2048
    expected = roofline.prefill_time_s(profile.deployment, 4096, 2048) / roofline.prefill_time_s(
        profile.deployment, 4096
    )
    assert results[1].ttft_s / results[0].ttft_s == pytest.approx(expected, rel=0.05)
    assert 0.45 < expected < 0.65


def test_it_caches_nothing_with_the_prefix_cache_off() -> None:
    tokens = [f"t{i}" for i in range(4096)]
    arrivals = [Arrival(at, len(tokens), 2, block_hashes(tokens)) for at in (0.0, 10.0)]
    results = simulate(BASE, arrivals)
    assert [r.cached_tokens for r in results] == [0, 0]
    assert results[1].ttft_s == pytest.approx(results[0].ttft_s, rel=1e-6)


def test_it_queues_requests_past_the_batch_capacity() -> None:
    profile = PRESETS["qwen-7b-a100-batch4"]
    results = batch(profile, 8, prompt_tokens=256, output_tokens=64)
    first_e2e_s = results[0].token_times_s[-1]
    assert all(r.queue_s == 0 for r in results[:4])
    assert all(r.queue_s > 0.9 * first_e2e_s for r in results[4:])


def test_it_queues_requests_when_the_kv_cache_is_full() -> None:
    profile = dataclasses.replace(BASE, kv_capacity_tokens=2500)
    results = batch(profile, 3, prompt_tokens=900, output_tokens=100)
    assert results[0].queue_s == 0
    assert results[1].queue_s == 0
    assert results[2].queue_s > 0.9 * results[0].token_times_s[-1]


def test_it_slows_every_decode_when_a_burst_of_long_prompts_arrives() -> None:
    arrivals = [Arrival(0.0, 100, 400)] + [Arrival(0.5, 8000, 2) for _ in range(8)]
    decoding = simulate(BASE, arrivals)[0]
    gaps_s = [b - a for a, b in itertools.pairwise(decoding.token_times_s)]
    calm_gap_s = gaps_s[10]
    assert max(gaps_s) > 10 * calm_gap_s


def test_it_lowers_tpot_by_the_expected_speculative_factor() -> None:
    plain = PRESETS["llama-70b-h100x4"]
    spec = PRESETS["llama-70b-h100x4-spec"]
    plain_tpot_s = alone(plain, 100, output_tokens=3000).tpot_s
    spec_result = alone(spec, 100, output_tokens=3000)
    assert spec.draft_deployment is not None
    context_tokens = 100 + 1500
    verify_s = roofline.step_time_s(
        spec.deployment,
        tokens=spec.draft_tokens + 1,
        attention_flops=roofline.decode_attention_flops(spec.model, context_tokens)
        * (spec.draft_tokens + 1),
        kv_tokens_read=context_tokens,
    )
    draft_s = roofline.decode_step_time_s(
        spec.draft_deployment, batch_size=1, context_tokens=context_tokens
    )
    step_s = verify_s + spec.draft_tokens * draft_s + spec.step_overhead_ms / 1000
    expected_tpot_s = step_s / roofline.speculative_tokens_per_step(
        spec.draft_tokens, spec.acceptance_rate
    )
    assert spec_result.tpot_s == pytest.approx(expected_tpot_s, rel=0.06)
    assert spec_result.tpot_s < 0.5 * plain_tpot_s


def test_it_emits_several_tokens_per_step_with_speculative_decoding() -> None:
    result = alone(PRESETS["llama-70b-h100x4-spec"], 100, output_tokens=200)
    steps = sorted(set(result.token_times_s))
    assert len(steps) < 0.6 * len(result.token_times_s)


def test_it_is_deterministic_for_a_profile_seed() -> None:
    spec = PRESETS["llama-70b-h100x4-spec"]
    assert alone(spec, 100, 300).token_times_s == alone(spec, 100, 300).token_times_s
    reseeded = dataclasses.replace(spec, seed=7)
    assert alone(reseeded, 100, 300).token_times_s != alone(spec, 100, 300).token_times_s
