"""The hardware and model catalog and the roofline functions shared with the advisor."""

from __future__ import annotations

import pytest

from advisor.core import roofline
from advisor.core.catalog import HARDWARE, MODELS, bytes_per_param, hardware_get, model_get

REQUIRED_HARDWARE = ("h100-sxm", "h200", "a100-80gb", "l40s", "l4", "a10g", "mi300x", "b200")
REQUIRED_MODELS = (
    "llama-3.1-8b",
    "llama-3.1-70b",
    "mistral-7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "mixtral-8x7b",
)


def h100(model: str = "llama-3.1-8b", **kwargs: object) -> roofline.Deployment:
    return roofline.Deployment(model=MODELS[model], hardware=HARDWARE["h100-sxm"], **kwargs)  # type: ignore[arg-type]


def test_it_lists_the_required_hardware_with_sources() -> None:
    assert set(REQUIRED_HARDWARE) <= set(HARDWARE)
    assert any(hw.kind == "cpu" for hw in HARDWARE.values())
    for hw in HARDWARE.values():
        assert hw.source
        assert hw.peak_flops_per_s["bf16"] > 1e12
        assert hw.hbm_bytes_per_s > 1e11
        assert hw.memory_bytes > 1e10


def test_it_lists_the_required_models_with_their_shapes() -> None:
    assert set(REQUIRED_MODELS) <= set(MODELS)
    for model in MODELS.values():
        assert model.source
        assert model.attention_heads % model.kv_heads == 0
        assert model.active_params <= model.total_params


def test_it_derives_mixtral_expert_and_shared_parameters() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    assert mixtral.active_params < 0.3 * mixtral.total_params
    routed = mixtral.expert_params * mixtral.experts_per_token / mixtral.experts
    assert mixtral.shared_params + routed == pytest.approx(mixtral.active_params)


def test_it_reads_more_experts_as_the_batch_grows() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    one = roofline.weight_bytes_read(mixtral, "bf16", 1)
    many = roofline.weight_bytes_read(mixtral, "bf16", 64)
    assert one == pytest.approx(mixtral.active_params * 2, rel=1e-9)
    assert many == pytest.approx(mixtral.total_params * 2, rel=1e-3)


def test_it_names_unknown_entries_clearly() -> None:
    with pytest.raises(ValueError, match="unknown hardware 'h900'"):
        hardware_get("h900")
    with pytest.raises(ValueError, match="unknown model"):
        model_get("gpt-9")
    with pytest.raises(ValueError, match="unknown dtype"):
        bytes_per_param("fp3")


def test_it_counts_kv_bytes_per_token_from_the_model_shape() -> None:
    # Llama 3.1 8B: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 128 KiB.
    assert roofline.kv_bytes_per_token(MODELS["llama-3.1-8b"], "bf16") == 131_072
    assert roofline.kv_bytes_per_token(MODELS["llama-3.1-8b"], "fp8") == 65_536


def test_it_counts_prefill_flops_as_two_per_parameter_plus_attention() -> None:
    model = MODELS["llama-3.1-8b"]
    flops = roofline.prefill_flops(model, 1000)
    linear = 2 * model.active_params * 1000
    assert flops == pytest.approx(linear + 2 * model.layers * model.query_dim * 1000**2)
    assert roofline.prefill_flops(model, 1000, cached_tokens=1000) == 0


def test_it_takes_the_roofline_maximum_of_compute_and_memory() -> None:
    deployment = h100()
    decode_s = roofline.decode_step_time_s(deployment, batch_size=1, context_tokens=0)
    memory_s = roofline.weight_bytes(deployment.model, "bf16") / deployment.bytes_per_s
    assert decode_s == pytest.approx(memory_s)
    prefill_s = roofline.prefill_time_s(deployment, 4096)
    assert prefill_s == pytest.approx(
        roofline.prefill_flops(deployment.model, 4096) / deployment.flops_per_s
    )


def test_it_uses_fp8_tensor_cores_only_where_the_hardware_has_them() -> None:
    assert h100(weight_dtype="fp8").compute_dtype == "fp8"
    a100 = roofline.Deployment(
        model=MODELS["llama-3.1-8b"], hardware=HARDWARE["a100-80gb"], weight_dtype="fp8"
    )
    assert a100.compute_dtype == "bf16"
    assert h100(weight_dtype="int4").compute_dtype == "bf16"


def test_it_finds_the_batch_where_decode_turns_compute_bound() -> None:
    deployment = h100()
    ridge = roofline.ridge_batch_size(deployment, context_tokens=100)
    assert ridge is not None
    below = roofline.decode_step_time_s(deployment, batch_size=ridge - 1, context_tokens=100)
    at = roofline.decode_step_time_s(deployment, batch_size=ridge, context_tokens=100)
    assert below < at
    assert roofline.ridge_batch_size(deployment, context_tokens=8000) is None


def test_it_leaves_kv_capacity_after_the_weights_or_refuses() -> None:
    deployment = h100()
    free_bytes = 80e9 * 0.9 - roofline.weight_bytes(deployment.model, "bf16")
    assert roofline.kv_capacity_tokens(deployment) == int(free_bytes // 131_072)
    with pytest.raises(ValueError, match="does not fit"):
        roofline.kv_capacity_tokens(h100("llama-3.1-70b"))


def test_it_expects_the_speculative_tokens_per_step() -> None:
    assert roofline.speculative_tokens_per_step(4, 0.0) == 1.0
    assert roofline.speculative_tokens_per_step(4, 1.0) == 5.0
    assert roofline.speculative_tokens_per_step(4, 0.7) == pytest.approx(
        1 + 0.7 + 0.7**2 + 0.7**3 + 0.7**4
    )


def test_it_rejects_impossible_deployments() -> None:
    with pytest.raises(ValueError, match="mfu"):
        h100(mfu=1.5)
    with pytest.raises(ValueError, match="weight_dtype"):
        h100(weight_dtype="fp4")
