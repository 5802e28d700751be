"""The measured endpoint against its hardware's roofline: minimum TTFT and TPOT, MFU and MBU.

Uses the shared catalog; the declared devices (default 1) add up their peaks, as tensor
parallelism would without its communication cost (an undeclared split shows up as MBU above 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.core import roofline
from advisor.core.catalog import Hardware, Model, WeightDtype, hardware_get, model_get
from advisor.core.diagnosis import Breakdown
from advisor.core.samples import Declared

NEAR_LIMIT_MFU = 0.4
"""Prefill reaching this share of peak FLOP/s is near the hardware limit."""
NEAR_LIMIT_MBU = 0.5
"""Decode reaching this share of peak memory bandwidth is near the hardware limit."""

_WEIGHT_DTYPE_ALIASES: dict[str, WeightDtype] = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "bf16",
    "float16": "bf16",
    "fp8": "fp8",
    "int8": "fp8",
    "int4": "int4",
}
"""Declared dtypes mapped onto the catalog's weight dtypes of the same storage width."""


class DeclaredError(ValueError):
    """A declared hardware, model or dtype the catalog does not know; the message lists names."""


@dataclass(frozen=True)
class Target:
    """A declared deployment resolved against the catalog, at peak (MFU = MBU = 1)."""

    hardware: Hardware
    model: Model
    weight_dtype: WeightDtype
    num_devices: int = 1

    def deployment(self, weight_dtype: WeightDtype | None = None) -> roofline.Deployment:
        return roofline.Deployment(
            model=self.model,
            hardware=self.hardware,
            num_devices=self.num_devices,
            weight_dtype=weight_dtype or self.weight_dtype,
            mfu=1.0,
            mbu=1.0,
        )


def resolve_declared(declared: Declared) -> Target | None:
    """The catalog entries for a declaration; None unless hardware, model and dtype are all set.

    Raises DeclaredError naming the known values when one is unknown, so a command line can
    refuse it before sending any request.
    """
    if declared.hardware is None or declared.model is None or declared.dtype is None:
        return None
    if declared.devices < 1:
        raise DeclaredError(f"devices must be at least 1, not {declared.devices}")
    try:
        hardware = hardware_get(declared.hardware)
        model = model_get(declared.model)
    except ValueError as error:
        raise DeclaredError(str(error)) from None
    dtype = _WEIGHT_DTYPE_ALIASES.get(declared.dtype.lower())
    if dtype is None:
        raise DeclaredError(
            f"unknown dtype {declared.dtype!r}; known: {sorted(_WEIGHT_DTYPE_ALIASES)}"
        )
    return Target(hardware=hardware, model=model, weight_dtype=dtype, num_devices=declared.devices)


def decode_context_tokens(prompt_tokens: int, output_tokens: int) -> int:
    """Mean context a decode step reads over a response: the prompt plus half the output."""
    return prompt_tokens + output_tokens // 2


def min_tpot_ms(
    target: Target,
    *,
    concurrency: int,
    prompt_tokens: int,
    output_tokens: int,
    weight_dtype: WeightDtype | None = None,
) -> float:
    """Roofline TPOT (ms/token) at peak bandwidth and compute, batch = concurrency."""
    seconds = roofline.decode_step_time_s(
        target.deployment(weight_dtype),
        batch_size=concurrency,
        context_tokens=decode_context_tokens(prompt_tokens, output_tokens),
    )
    return seconds * 1000.0


@dataclass(frozen=True)
class RooflineCheck:
    """Achieved versus theoretical; utilisations are shares of one device's datasheet peak."""

    target: Target
    min_ttft_ms: float
    min_tpot_ms: float
    mfu: float | None
    mbu: float | None

    @property
    def prefill_verdict(self) -> str | None:
        if self.mfu is None:
            return None
        return "near_limit" if self.mfu >= NEAR_LIMIT_MFU else "far_below"

    @property
    def decode_verdict(self) -> str | None:
        if self.mbu is None:
            return None
        return "near_limit" if self.mbu >= NEAR_LIMIT_MBU else "far_below"

    def advice(self, bottleneck: str) -> str:
        """One plain sentence on what the roofline says about the bottleneck phase."""
        if bottleneck == "decode":
            text = (
                "Decode is memory-bandwidth bound: more FLOP/s will not help; memory bandwidth "
                "or fewer bytes per token (quantization, a smaller model) will."
            )
            if self.decode_verdict == "near_limit":
                text += (
                    f" It already reaches {self.mbu:.0%} of {self.target.hardware.label}'s "
                    "bandwidth: near the limit, so quantize, use a smaller model or hardware "
                    "with more bandwidth."
                )
            elif self.decode_verdict == "far_below":
                text += (
                    f" It reaches only {self.mbu:.0%} of {self.target.hardware.label}'s "
                    "bandwidth: look at the serving configuration (batching, kernels, "
                    "CPU overhead) first."
                )
            return text
        if bottleneck == "prefill" and self.mfu is not None:
            if self.prefill_verdict == "near_limit":
                return (
                    f"Prefill runs at {self.mfu:.0%} of peak FLOP/s, near the limit: cache or "
                    "shorten the prompt, or use faster hardware."
                )
            return (
                f"Prefill reaches only {self.mfu:.0%} of peak FLOP/s: a serving or "
                "configuration problem (chunked prefill size, batching, kernels) first."
            )
        return ""

    def to_dict(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "hardware": self.target.hardware.name,
            "model": self.target.model.name,
            "dtype": self.target.weight_dtype,
            "devices_assumed": self.target.num_devices,
            "min_ttft_ms": rounded(self.min_ttft_ms),
            "min_tpot_ms": rounded(self.min_tpot_ms),
            "mfu": rounded(self.mfu),
            "mbu": rounded(self.mbu),
            "prefill_verdict": self.prefill_verdict,
            "decode_verdict": self.decode_verdict,
        }


def roofline_check(
    target: Target,
    breakdown: Breakdown,
    *,
    prompt_tokens: int,
    cached_tokens: int,
    output_tokens: int,
    concurrency: int,
) -> RooflineCheck:
    """Theoretical minimum TTFT (the prefill alone: no network or serving overhead) and TPOT
    for the typical request, and the MFU / MBU its measured prefill and TPOT imply.

    MFU = prefill FLOPs / (measured prefill s x peak FLOP/s); MBU = decode bytes per step /
    (measured TPOT s x peak bytes/s). Both are None when the measured time is 0.
    """
    deployment = target.deployment()
    cached = min(cached_tokens, prompt_tokens)
    min_prefill_ms = roofline.prefill_time_s(deployment, prompt_tokens, cached) * 1000.0
    flops = roofline.prefill_flops(target.model, prompt_tokens, cached)
    step_bytes = roofline.decode_step_bytes(
        deployment,
        batch_size=concurrency,
        context_tokens=decode_context_tokens(prompt_tokens, output_tokens),
    )
    mfu = (
        flops / (breakdown.prefill_ms / 1000.0) / deployment.flops_per_s
        if breakdown.prefill_ms > 0
        else None
    )
    mbu = (
        step_bytes / (breakdown.tpot_ms / 1000.0) / deployment.bytes_per_s
        if breakdown.tpot_ms > 0
        else None
    )
    return RooflineCheck(
        target=target,
        min_ttft_ms=min_prefill_ms,
        min_tpot_ms=min_tpot_ms(
            target,
            concurrency=concurrency,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
        ),
        mfu=mfu,
        mbu=mbu,
    )
