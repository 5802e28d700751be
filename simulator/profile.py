"""Simulator profiles: hardware x model x serving options, the built-in presets, and JSON loading.

A profile is everything that shapes a simulated endpoint's latency; its name is the model id
clients send. Presets are built from one base with a few overrides each.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.core import roofline
from advisor.core.catalog import (
    HARDWARE,
    MODELS,
    Hardware,
    KvDtype,
    Model,
    WeightDtype,
    hardware_get,
    model_get,
)

FAULT_KINDS = ("error_500", "rate_limit", "malformed", "stall", "disconnect", "trickle")


@dataclass(frozen=True, slots=True)
class Profile:
    """One simulated endpoint. Durations in ms, shares in [0, 1], sizes in tokens.

    `max_batched_tokens` is the per-step token budget (vLLM's chunked prefill): decode tokens
    come first, prompts fill the rest in chunks; 0 prefills each admitted prompt whole.
    `kv_capacity_tokens` of 0 derives the capacity from memory left after the weights.
    `fault_rates` maps a fault kind to the share of requests that meet it.
    `step_overhead_ms` is the engine's fixed cost per step (scheduling, sampling, launches);
    `request_overhead_ms` the API server's per request (HTTP, tokenising, hand-off to the
    engine): the TTFT of an empty prompt on an idle server, before any network round trip.
    """

    name: str
    description: str
    model: Model
    hardware: Hardware
    num_devices: int = 1
    weight_dtype: WeightDtype = "bf16"
    kv_dtype: KvDtype = "bf16"
    mfu: float = 0.5
    mbu: float = 0.8
    memory_utilization: float = 0.9
    max_batch_size: int = 256
    max_batched_tokens: int = 8192
    kv_capacity_tokens: int = 0
    step_overhead_ms: float = 0.3
    request_overhead_ms: float = 10.0
    prefix_cache: bool = False
    prefix_cache_tokens: int = 200_000
    draft_model: Model | None = None
    draft_tokens: int = 0
    acceptance_rate: float = 0.0
    reasoning_tokens_mean: int = 0
    output_tokens_mean: int = 200
    network_rtt_ms: float = 0.0
    network_jitter_ms: float = 0.0
    fault_rates: Mapping[str, float] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        unknown = set(self.fault_rates) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        if not all(0.0 <= rate <= 1.0 for rate in self.fault_rates.values()):
            raise ValueError("fault rates are shares of requests, in [0, 1]")
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if self.draft_tokens and self.draft_model is None:
            raise ValueError("draft_tokens needs a draft_model")
        per_step_decode_tokens = self.max_batch_size * (self.draft_tokens + 1)
        if self.max_batched_tokens and self.max_batched_tokens <= per_step_decode_tokens:
            raise ValueError("max_batched_tokens must exceed max_batch_size x (draft_tokens + 1)")
        # Builds the deployment, which checks dtypes, utilisations and that the weights fit.
        if self.resolved_kv_capacity_tokens < 1:
            raise ValueError("the KV cache has no room")

    @property
    def deployment(self) -> roofline.Deployment:
        return roofline.Deployment(
            model=self.model,
            hardware=self.hardware,
            num_devices=self.num_devices,
            weight_dtype=self.weight_dtype,
            kv_dtype=self.kv_dtype,
            mfu=self.mfu,
            mbu=self.mbu,
        )

    @property
    def draft_deployment(self) -> roofline.Deployment | None:
        if self.draft_model is None:
            return None
        return dataclasses.replace(self.deployment, model=self.draft_model)

    @property
    def resolved_kv_capacity_tokens(self) -> int:
        if self.kv_capacity_tokens:
            return self.kv_capacity_tokens
        return roofline.kv_capacity_tokens(self.deployment, self.memory_utilization)

    @property
    def speculative(self) -> bool:
        return self.draft_model is not None and self.draft_tokens > 0


_BASE = Profile(
    name="llama-8b-h100",
    description="Llama 3.1 8B bf16 on one H100 SXM: the everyday baseline",
    model=MODELS["llama-3.1-8b"],
    hardware=HARDWARE["h100-sxm"],
)


def _preset(name: str, description: str, **overrides: Any) -> Profile:
    return dataclasses.replace(_BASE, name=name, description=description, **overrides)


PRESETS: Mapping[str, Profile] = {
    preset.name: preset
    for preset in (
        _BASE,
        _preset(
            "llama-8b-h100-int4",
            "int4 (W4A16) twin of llama-8b-h100: a quarter of the bytes per token, same FLOPs",
            weight_dtype="int4",
        ),
        _preset(
            "llama-8b-h100-fp8",
            "fp8 (W8A8) twin of llama-8b-h100: half the bytes, fp8 tensor cores",
            weight_dtype="fp8",
            kv_dtype="fp8",
        ),
        _preset(
            "llama-8b-h100-cache",
            "llama-8b-h100 with automatic prefix caching: repeated prefixes skip prefill",
            prefix_cache=True,
        ),
        _preset(
            "mistral-7b-a10g-int4",
            "prefill-heavy: weak A10G tensor cores, cheap int4 decode, short answers (extraction)",
            model=MODELS["mistral-7b"],
            hardware=HARDWARE["a10g"],
            weight_dtype="int4",
            output_tokens_mean=24,
        ),
        _preset(
            "llama-8b-l4",
            "decode-heavy: bandwidth-poor L4 writing long answers",
            hardware=HARDWARE["l4"],
            output_tokens_mean=800,
        ),
        _preset(
            "qwen-7b-a100-batch4",
            "saturates early: Qwen2.5 7B on A100 capped at 4 concurrent sequences, then queues",
            model=MODELS["qwen2.5-7b"],
            hardware=HARDWARE["a100-80gb"],
            max_batch_size=4,
        ),
        _preset(
            "llama-70b-h100x4",
            "Llama 3.1 70B bf16, tensor parallel over 4 H100 SXM",
            model=MODELS["llama-3.1-70b"],
            num_devices=4,
            mfu=0.4,
            mbu=0.7,
        ),
        _preset(
            "llama-70b-h100x4-spec",
            "llama-70b-h100x4 with speculative decoding: Llama 3.2 1B drafts 4, 70% accepted",
            model=MODELS["llama-3.1-70b"],
            num_devices=4,
            mfu=0.4,
            mbu=0.7,
            draft_model=MODELS["llama-3.2-1b"],
            draft_tokens=4,
            acceptance_rate=0.7,
        ),
        _preset(
            "mixtral-8x7b-h100x2",
            "Mixtral 8x7B mixture of experts (12.9B of 46.7B parameters active) on 2 H100 SXM",
            model=MODELS["mixtral-8x7b"],
            num_devices=2,
        ),
        _preset(
            "qwen-72b-mi300x-fp8",
            "Qwen2.5 72B fp8 on one MI300X",
            model=MODELS["qwen2.5-72b"],
            hardware=HARDWARE["mi300x"],
            weight_dtype="fp8",
            mfu=0.4,
            mbu=0.6,
        ),
        _preset(
            "r1-qwen-7b-h100",
            "reasoning model: R1-Distill-Qwen-7B thinks (reasoning_content) before it answers",
            model=MODELS["r1-distill-qwen-7b"],
            reasoning_tokens_mean=600,
        ),
        _preset(
            "llama-8b-b200-fp8",
            "Llama 3.1 8B fp8 on one B200",
            hardware=HARDWARE["b200"],
            weight_dtype="fp8",
            kv_dtype="fp8",
        ),
        _preset(
            "llama-1b-cpu",
            "Llama 3.2 1B bf16 on one Xeon 8480+ socket (AMX): no GPU at all",
            model=MODELS["llama-3.2-1b"],
            hardware=HARDWARE["xeon-8480"],
            mfu=0.3,
            mbu=0.6,
            max_batch_size=16,
            step_overhead_ms=2.0,
        ),
    )
}


def preset_get(name: str) -> Profile:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def _resolve(value: object, *, lookup: Any, kind: type) -> object:
    """A catalog name, or an inline object whose fields build a new catalog entry."""
    if isinstance(value, str):
        return lookup(value)
    if isinstance(value, dict):
        try:
            return kind(**value)
        except TypeError as error:
            raise ValueError(f"invalid {kind.__name__.lower()} entry: {error}") from None
    raise ValueError(f"expected a catalog name or an object, got {value!r}")


def profile_from_dict(data: Mapping[str, Any]) -> Profile:
    """A profile from JSON-like data: a preset to start from (`base`, default llama-8b-h100),
    then any Profile field. `model`, `hardware` and `draft_model` are catalog names or objects.
    """
    fields = dict(data)
    base = preset_get(str(fields.pop("base", _BASE.name)))
    known = {f.name for f in dataclasses.fields(Profile)}
    unknown = set(fields) - known
    if unknown:
        raise ValueError(f"unknown profile fields {sorted(unknown)}; known: {sorted(known)}")
    if "model" in fields:
        fields["model"] = _resolve(fields["model"], lookup=model_get, kind=Model)
    if "hardware" in fields:
        fields["hardware"] = _resolve(fields["hardware"], lookup=hardware_get, kind=Hardware)
    if fields.get("draft_model") is not None:
        fields["draft_model"] = _resolve(fields["draft_model"], lookup=model_get, kind=Model)
    try:
        return dataclasses.replace(base, **fields)
    except TypeError as error:
        raise ValueError(f"invalid profile: {error}") from None


def profiles_load(path: Path) -> list[Profile]:
    """Profiles from a JSON file holding one profile object or a list of them."""
    data = json.loads(path.read_text())
    items = data if isinstance(data, list) else [data]
    return [profile_from_dict(item) for item in items]
