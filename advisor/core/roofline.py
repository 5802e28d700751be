"""Roofline maths for LLM serving: FLOPs and bytes per forward pass, and the time they take.

A step takes the longer of compute (FLOPs / (peak x MFU)) and memory (bytes / (bandwidth x MBU)).
Prefill is compute bound for all but tiny prompts; decode is memory bound until the batch is big.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.catalog import (
    KV_DTYPES,
    WEIGHT_DTYPES,
    Hardware,
    KvDtype,
    Model,
    WeightDtype,
    bytes_per_param,
)

DEFAULT_MFU = 0.5
DEFAULT_MBU = 0.8
DEFAULT_MEMORY_UTILIZATION = 0.9
_MAX_BATCH_SIZE = 1 << 20


@dataclass(frozen=True, slots=True)
class Deployment:
    """A model served on `num_devices` devices of one kind (tensor parallel), with efficiencies.

    `mfu` (model FLOPs utilisation) and `mbu` (model bandwidth utilisation) are the shares of the
    datasheet peaks a real engine reaches; tensor parallelism is modelled as aggregate peaks.
    Weights in fp8 use the fp8 tensor cores when the hardware has them (W8A8); int4 weights are
    dequantised and multiplied in bf16 (W4A16), so int4 saves bytes but not FLOPs.
    """

    model: Model
    hardware: Hardware
    num_devices: int = 1
    weight_dtype: WeightDtype = "bf16"
    kv_dtype: KvDtype = "bf16"
    mfu: float = DEFAULT_MFU
    mbu: float = DEFAULT_MBU

    def __post_init__(self) -> None:
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(
                f"weight_dtype must be one of {WEIGHT_DTYPES}, not {self.weight_dtype!r}"
            )
        if self.kv_dtype not in KV_DTYPES:
            raise ValueError(f"kv_dtype must be one of {KV_DTYPES}, not {self.kv_dtype!r}")
        if self.num_devices < 1:
            raise ValueError("num_devices must be at least 1")
        for name, share in (("mfu", self.mfu), ("mbu", self.mbu)):
            if not 0.0 < share <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], not {share}")

    @property
    def compute_dtype(self) -> str:
        if self.weight_dtype == "fp8" and self.hardware.supports("fp8"):
            return "fp8"
        return "bf16"

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s: dense peak x devices x MFU."""
        peak_flops_per_s = self.hardware.peak_flops_for(self.compute_dtype)
        return peak_flops_per_s * self.num_devices * self.mfu

    @property
    def bytes_per_s(self) -> float:
        """Achieved memory bandwidth in bytes/s: datasheet bandwidth x devices x MBU."""
        return self.hardware.hbm_bytes_per_s * self.num_devices * self.mbu

    @property
    def memory_bytes(self) -> float:
        return self.hardware.memory_bytes * self.num_devices


def weight_bytes(model: Model, weight_dtype: str) -> float:
    """Bytes all the model's weights occupy in `weight_dtype`."""
    return model.total_params * bytes_per_param(weight_dtype)


def weight_bytes_read(model: Model, weight_dtype: str, tokens: int) -> float:
    """Weight bytes one forward pass over `tokens` tokens reads from memory.

    Dense models read every weight once per pass. A mixture of experts reads the shared weights
    plus the experts at least one token routes to: with uniform routing a given expert is missed
    by all tokens with probability (1 - k/E)^tokens.
    """
    if tokens <= 0:
        return 0.0
    if not model.is_moe:
        return weight_bytes(model, weight_dtype)
    missed_share = (1.0 - model.experts_per_token / model.experts) ** tokens
    params_read = model.shared_params + model.expert_params * (1.0 - missed_share)
    return params_read * bytes_per_param(weight_dtype)


def kv_bytes_per_token(model: Model, kv_dtype: str) -> float:
    """KV-cache bytes one token occupies: keys and values, every layer, every KV head."""
    return 2.0 * model.layers * model.kv_heads * model.head_dim * bytes_per_param(kv_dtype)


def attention_flops(model: Model, start_token: int, end_token: int) -> float:
    """Attention FLOPs (QK^T and AV) for prompt positions [start_token, end_token).

    The token at position i attends to i earlier tokens: 4 x query_dim x i FLOPs per layer. The
    sum over the range is 2 x query_dim x (end^2 - start^2): quadratic in the prompt length.
    """
    if end_token <= start_token:
        return 0.0
    return 2.0 * model.layers * model.query_dim * float(end_token**2 - start_token**2)


def decode_attention_flops(model: Model, context_tokens: int) -> float:
    """Attention FLOPs for one new token that attends to `context_tokens` cached tokens."""
    return 4.0 * model.layers * model.query_dim * float(context_tokens)


def prefill_flops(model: Model, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """FLOPs to prefill a prompt whose first `cached_tokens` are already in the KV cache.

    2 x active parameters per uncached token (one multiply-add per weight) plus attention.
    """
    uncached_tokens = prompt_tokens - cached_tokens
    if uncached_tokens < 0:
        raise ValueError("cached_tokens cannot exceed prompt_tokens")
    linear_flops = 2.0 * model.active_params * uncached_tokens
    return linear_flops + attention_flops(model, cached_tokens, prompt_tokens)


def roofline_time_s(deployment: Deployment, *, flops: float, bytes_moved: float) -> float:
    """Seconds for work of `flops` FLOPs that moves `bytes_moved` bytes: the slower of the two."""
    compute_s = flops / deployment.flops_per_s
    memory_s = bytes_moved / deployment.bytes_per_s
    return max(compute_s, memory_s)


def step_time_s(
    deployment: Deployment, *, tokens: int, attention_flops: float, kv_tokens_read: int
) -> float:
    """One forward pass over `tokens` new tokens (decode tokens and prefill chunks together).

    `attention_flops` is the attention work of those tokens and `kv_tokens_read` the cached
    tokens whose keys and values the pass reads (every decoding sequence reads its whole context).
    """
    model = deployment.model
    flops = 2.0 * model.active_params * tokens + attention_flops
    bytes_moved = weight_bytes_read(model, deployment.weight_dtype, tokens)
    bytes_moved += kv_bytes_per_token(model, deployment.kv_dtype) * kv_tokens_read
    return roofline_time_s(deployment, flops=flops, bytes_moved=bytes_moved)


def prefill_time_s(deployment: Deployment, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Seconds to prefill one prompt alone (no other work in the step)."""
    return step_time_s(
        deployment,
        tokens=prompt_tokens - cached_tokens,
        attention_flops=attention_flops(deployment.model, cached_tokens, prompt_tokens),
        kv_tokens_read=prompt_tokens,
    )


def prefill_tokens_per_s(deployment: Deployment, prompt_tokens: int) -> float:
    """Uncached prompt tokens prefilled per second for a prompt of `prompt_tokens` tokens."""
    return prompt_tokens / prefill_time_s(deployment, prompt_tokens)


def decode_step_bytes(deployment: Deployment, *, batch_size: int, context_tokens: int) -> float:
    """Bytes one decode step reads: the weights plus the KV cache of every sequence in the batch.

    `context_tokens` is each sequence's context (prompt plus tokens generated so far).
    """
    model = deployment.model
    kv_bytes = kv_bytes_per_token(model, deployment.kv_dtype) * batch_size * context_tokens
    return weight_bytes_read(model, deployment.weight_dtype, batch_size) + kv_bytes


def decode_step_flops(model: Model, *, batch_size: int, context_tokens: int) -> float:
    """FLOPs of one decode step: one token for each of `batch_size` sequences."""
    per_token_flops = 2.0 * model.active_params + decode_attention_flops(model, context_tokens)
    return per_token_flops * batch_size


def decode_step_time_s(deployment: Deployment, *, batch_size: int, context_tokens: int) -> float:
    """Seconds for one decode step; with batch size 1 this is the TPOT on an idle server."""
    return roofline_time_s(
        deployment,
        flops=decode_step_flops(
            deployment.model, batch_size=batch_size, context_tokens=context_tokens
        ),
        bytes_moved=decode_step_bytes(
            deployment, batch_size=batch_size, context_tokens=context_tokens
        ),
    )


def ridge_batch_size(deployment: Deployment, context_tokens: int) -> int | None:
    """Smallest decode batch that is compute bound, or None if decode stays memory bound.

    Past this batch TPOT grows in proportion to the batch. With long contexts every sequence adds
    its KV cache to the bytes read, and decode can stay memory bound at any batch size.
    """

    def compute_bound(batch_size: int) -> bool:
        kwargs = {"batch_size": batch_size, "context_tokens": context_tokens}
        compute_s = decode_step_flops(deployment.model, **kwargs) / deployment.flops_per_s
        return compute_s >= decode_step_bytes(deployment, **kwargs) / deployment.bytes_per_s

    upper = 1
    while not compute_bound(upper):
        if upper >= _MAX_BATCH_SIZE:
            return None
        upper *= 2
    lower = upper // 2  # memory bound (or 0)
    while upper - lower > 1:
        middle = (lower + upper) // 2
        if compute_bound(middle):
            upper = middle
        else:
            lower = middle
    return upper


def kv_capacity_tokens(
    deployment: Deployment, memory_utilization: float = DEFAULT_MEMORY_UTILIZATION
) -> int:
    """Tokens the KV cache holds: the usable memory left after the weights, over KV bytes/token.

    Raises ValueError when the weights alone do not fit.
    """
    usable_bytes = deployment.memory_bytes * memory_utilization
    free_bytes = usable_bytes - weight_bytes(deployment.model, deployment.weight_dtype)
    if free_bytes <= 0:
        raise ValueError(
            f"{deployment.model.label} in {deployment.weight_dtype} does not fit in "
            f"{deployment.num_devices} x {deployment.hardware.label}"
        )
    return int(free_bytes // kv_bytes_per_token(deployment.model, deployment.kv_dtype))


def speculative_tokens_per_step(draft_tokens: int, acceptance_rate: float) -> float:
    """Expected tokens one speculative step emits: accepted drafts plus the verifier's own token.

    Each draft is accepted with probability `acceptance_rate` until the first rejection, so the
    expectation is (1 - a^(k+1)) / (1 - a) for k draft tokens (Leviathan et al., 2023).
    """
    if not 0.0 <= acceptance_rate <= 1.0:
        raise ValueError("acceptance_rate must be in [0, 1]")
    if acceptance_rate == 1.0:
        return float(draft_tokens + 1)
    return (1.0 - acceptance_rate ** (draft_tokens + 1)) / (1.0 - acceptance_rate)
