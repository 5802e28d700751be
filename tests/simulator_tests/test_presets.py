"""Each preset shows the behaviour its description promises."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.engine import Arrival, simulate
from simulator.profile import PRESETS, preset_get, profile_from_dict


def typical_parts_s(name: str, prompt_tokens: int = 1000) -> tuple[float, float]:
    """(TTFT, decode time) of one request of natural length on an idle server."""
    profile = PRESETS[name]
    output_tokens = profile.output_tokens_mean
    (result,) = simulate(profile, [Arrival(0.0, prompt_tokens, output_tokens)])
    return result.ttft_s, result.token_times_s[-1] - result.ttft_s


def test_it_has_a_prefill_heavy_and_a_decode_heavy_preset() -> None:
    ttft_s, decode_s = typical_parts_s("mistral-7b-a10g-int4")
    assert ttft_s > 1.5 * decode_s
    ttft_s, decode_s = typical_parts_s("llama-8b-l4")
    assert decode_s > 20 * ttft_s


def test_it_has_a_preset_that_queues_at_modest_concurrency() -> None:
    results = simulate(PRESETS["qwen-7b-a100-batch4"], [Arrival(0.0, 500, 100)] * 5)
    assert results[-1].queue_s > 0
    assert (
        max(r.queue_s for r in simulate(PRESETS["llama-8b-h100"], [Arrival(0.0, 500, 100)] * 5))
        == 0
    )


def test_it_has_an_int4_twin_that_differs_only_in_weights() -> None:
    bf16, int4 = PRESETS["llama-8b-h100"], PRESETS["llama-8b-h100-int4"]
    assert int4.weight_dtype == "int4"
    assert (
        dataclasses.replace(int4, name=bf16.name, description=bf16.description, weight_dtype="bf16")
        == bf16
    )


def test_it_has_caching_speculative_and_reasoning_presets() -> None:
    assert PRESETS["llama-8b-h100-cache"].prefix_cache
    assert PRESETS["llama-70b-h100x4-spec"].speculative
    assert PRESETS["r1-qwen-7b-h100"].reasoning_tokens_mean > 0


def test_it_names_presets_in_short_kebab_case() -> None:
    for name in PRESETS:
        assert name == name.lower()
        assert " " not in name
        assert "_" not in name
        assert len(name) <= 24


def test_it_builds_a_profile_from_json_data_with_clear_errors() -> None:
    profile = profile_from_dict({"name": "x", "base": "llama-8b-l4", "hardware": "h200"})
    assert profile.hardware.name == "h200"
    assert profile.output_tokens_mean == PRESETS["llama-8b-l4"].output_tokens_mean
    with pytest.raises(ValueError, match="unknown profile fields"):
        profile_from_dict({"name": "x", "gpu": "h200"})
    with pytest.raises(ValueError, match="invalid hardware entry"):
        profile_from_dict({"name": "x", "hardware": {"name": "half-a-gpu"}})
    with pytest.raises(ValueError, match="does not fit"):
        profile_from_dict({"name": "x", "model": "llama-3.1-70b", "hardware": "l4"})
    with pytest.raises(ValueError, match="fault rates"):
        profile_from_dict({"name": "x", "fault_rates": {"error_500": 2}})
    with pytest.raises(ValueError, match="unknown preset"):
        preset_get("llama-8b-tpu")
