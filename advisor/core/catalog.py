"""Hardware and model catalog: the one source of truth for peak FLOP/s, bandwidth and model shapes.

Used by the advisor's roofline math and by the simulator. Every number carries its unit in its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Dtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
WeightDtype = Literal["bf16", "fp8", "int4"]
KvDtype = Literal["bf16", "fp8"]

WEIGHT_DTYPES: tuple[WeightDtype, ...] = ("bf16", "fp8", "int4")
KV_DTYPES: tuple[KvDtype, ...] = ("bf16", "fp8")

_BYTES_PER_PARAM: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    # Group-wise scales (AWQ/GPTQ, group 128) add about 3 %; ignored so that bytes per parameter
    # stays the plain storage width the advice talks about.
    "int4": 0.5,
}

TERA = 1e12
GIGA = 1e9


def bytes_per_param(dtype: str) -> float:
    """Storage bytes of one parameter (or one KV-cache element) in `dtype`."""
    try:
        return _BYTES_PER_PARAM[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; known: {sorted(_BYTES_PER_PARAM)}") from None


@dataclass(frozen=True, slots=True)
class Hardware:
    """One accelerator (or one CPU socket): dense peak compute, memory bandwidth and size.

    `peak_flops_per_s` maps a compute dtype to the vendor's dense (no structured sparsity) peak.
    A dtype missing from it is not accelerated: `peak_flops_for` falls back to bf16.
    """

    name: str
    label: str
    kind: Literal["gpu", "cpu"]
    peak_flops_per_s: Mapping[str, float]
    hbm_bytes_per_s: float
    memory_bytes: float
    source: str

    def peak_flops_for(self, dtype: str) -> float:
        """Dense peak FLOP/s for matrix maths in `dtype` (bf16 when `dtype` has no fast path)."""
        return self.peak_flops_per_s.get(dtype, self.peak_flops_per_s["bf16"])

    def supports(self, dtype: str) -> bool:
        return dtype in self.peak_flops_per_s


@dataclass(frozen=True, slots=True)
class Model:
    """A decoder-only transformer's shape, enough for FLOP and byte counts.

    For a mixture of experts, `active_params` are the parameters one token touches (shared
    layers plus `experts_per_token` of `experts` expert FFNs); dense models have both equal.
    """

    name: str
    label: str
    hf_id: str
    total_params: float
    active_params: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    context_tokens: int
    source: str
    experts: int = 1
    experts_per_token: int = 1

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def expert_params(self) -> float:
        """Parameters of all expert FFNs together (0 for a dense model).

        From total = shared + experts and active = shared + experts * k / E.
        """
        if not self.is_moe:
            return 0.0
        routed_share = self.experts_per_token / self.experts
        return (self.total_params - self.active_params) / (1.0 - routed_share)

    @property
    def shared_params(self) -> float:
        """Parameters every token reads (attention, embeddings, norms, dense FFNs)."""
        return self.total_params - self.expert_params

    @property
    def query_dim(self) -> int:
        """Width of the attention queries: attention heads x head dimension."""
        return self.attention_heads * self.head_dim


def _tflops(**by_dtype: float) -> dict[str, float]:
    return {dtype: value * TERA for dtype, value in by_dtype.items()}


_HARDWARE: tuple[Hardware, ...] = (
    Hardware(
        name="h100-sxm",
        label="NVIDIA H100 SXM 80GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=989.0, fp16=989.0, fp8=1979.0, int8=1979.0),
        hbm_bytes_per_s=3.35 * TERA,
        memory_bytes=80 * GIGA,
        source="NVIDIA H100 Tensor Core GPU datasheet (SXM column; sparsity figures halved)",
    ),
    Hardware(
        name="h200",
        label="NVIDIA H200 SXM 141GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=989.0, fp16=989.0, fp8=1979.0, int8=1979.0),
        hbm_bytes_per_s=4.8 * TERA,
        memory_bytes=141 * GIGA,
        source="NVIDIA H200 Tensor Core GPU datasheet (SXM column; sparsity figures halved)",
    ),
    Hardware(
        name="a100-80gb",
        label="NVIDIA A100 SXM 80GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=312.0, fp16=312.0, int8=624.0),
        hbm_bytes_per_s=2.039 * TERA,
        memory_bytes=80 * GIGA,
        source="NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column, dense)",
    ),
    Hardware(
        name="a100-40gb",
        label="NVIDIA A100 SXM 40GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=312.0, fp16=312.0, int8=624.0),
        hbm_bytes_per_s=1.555 * TERA,
        memory_bytes=40 * GIGA,
        source="NVIDIA A100 Tensor Core GPU datasheet (40GB SXM column, dense)",
    ),
    Hardware(
        name="l40s",
        label="NVIDIA L40S 48GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=362.05, fp16=362.05, fp8=733.0, int8=733.0),
        hbm_bytes_per_s=0.864 * TERA,
        memory_bytes=48 * GIGA,
        source="NVIDIA L40S GPU datasheet (dense; sparsity figures halved)",
    ),
    Hardware(
        name="l4",
        label="NVIDIA L4 24GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=121.0, fp16=121.0, fp8=242.5, int8=242.5),
        hbm_bytes_per_s=0.300 * TERA,
        memory_bytes=24 * GIGA,
        source="NVIDIA L4 Tensor Core GPU datasheet (dense; sparsity figures halved)",
    ),
    Hardware(
        name="a10g",
        label="NVIDIA A10G 24GB (AWS G5)",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=70.0, fp16=70.0, int8=140.0),
        hbm_bytes_per_s=0.600 * TERA,
        memory_bytes=24 * GIGA,
        source=(
            "AWS EC2 G5 instance specifications (A10G: 24 GB GDDR6, 600 GB/s); tensor peak as "
            "compared with the A10 datasheet in Baseten's 'NVIDIA A10 vs A10G' note"
        ),
    ),
    Hardware(
        name="mi300x",
        label="AMD Instinct MI300X 192GB",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=1307.4, fp16=1307.4, fp8=2614.9, int8=2614.9),
        hbm_bytes_per_s=5.3 * TERA,
        memory_bytes=192 * GIGA,
        source="AMD Instinct MI300X accelerator datasheet (dense, no sparsity)",
    ),
    Hardware(
        name="b200",
        label="NVIDIA B200 180GB (HGX)",
        kind="gpu",
        peak_flops_per_s=_tflops(bf16=2250.0, fp16=2250.0, fp8=4500.0, int8=4500.0),
        hbm_bytes_per_s=8.0 * TERA,
        memory_bytes=180 * GIGA,
        source="NVIDIA HGX B200 datasheet, per GPU (dense; sparsity figures halved)",
    ),
    Hardware(
        name="xeon-8480",
        label="Intel Xeon Platinum 8480+ (one socket, AMX)",
        kind="cpu",
        # 56 cores x 2.0 GHz x 1024 bf16 FLOP/cycle (AMX) and 2048 int8 op/cycle per core.
        peak_flops_per_s=_tflops(bf16=114.7, int8=229.4),
        # 8 channels of DDR5-4800 x 8 bytes.
        hbm_bytes_per_s=0.3072 * TERA,
        memory_bytes=512 * GIGA,
        source=(
            "Intel ARK: Xeon Platinum 8480+ (56 cores, 2.0 GHz base, 8x DDR5-4800); Intel AMX "
            "per-core throughput from the Intel Architecture Instruction Set Extensions guide"
        ),
    ),
)

_LLAMA_31_SOURCE = "meta-llama/Llama-3.1-{size} config.json and model card (Hugging Face)"

_MODELS: tuple[Model, ...] = (
    Model(
        name="qwen2.5-0.5b",
        label="Qwen2.5 0.5B",
        hf_id="Qwen/Qwen2.5-0.5B-Instruct",
        total_params=0.494e9,
        active_params=0.494e9,
        layers=24,
        hidden_size=896,
        attention_heads=14,
        kv_heads=2,
        head_dim=64,
        context_tokens=32_768,
        source="Qwen/Qwen2.5-0.5B-Instruct config.json and model card (Hugging Face)",
    ),
    Model(
        name="llama-3.2-1b",
        label="Llama 3.2 1B",
        hf_id="meta-llama/Llama-3.2-1B-Instruct",
        total_params=1.24e9,
        active_params=1.24e9,
        layers=16,
        hidden_size=2048,
        attention_heads=32,
        kv_heads=8,
        head_dim=64,
        context_tokens=131_072,
        source="meta-llama/Llama-3.2-1B-Instruct config.json and model card (Hugging Face)",
    ),
    Model(
        name="llama-3.1-8b",
        label="Llama 3.1 8B",
        hf_id="meta-llama/Llama-3.1-8B-Instruct",
        total_params=8.03e9,
        active_params=8.03e9,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        context_tokens=131_072,
        source=_LLAMA_31_SOURCE.format(size="8B-Instruct"),
    ),
    Model(
        name="llama-3.1-70b",
        label="Llama 3.1 70B",
        hf_id="meta-llama/Llama-3.1-70B-Instruct",
        total_params=70.6e9,
        active_params=70.6e9,
        layers=80,
        hidden_size=8192,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        context_tokens=131_072,
        source=_LLAMA_31_SOURCE.format(size="70B-Instruct"),
    ),
    Model(
        name="mistral-7b",
        label="Mistral 7B v0.3",
        hf_id="mistralai/Mistral-7B-Instruct-v0.3",
        total_params=7.25e9,
        active_params=7.25e9,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        context_tokens=32_768,
        source="mistralai/Mistral-7B-Instruct-v0.3 config.json (Hugging Face)",
    ),
    Model(
        name="qwen2.5-7b",
        label="Qwen2.5 7B",
        hf_id="Qwen/Qwen2.5-7B-Instruct",
        total_params=7.62e9,
        active_params=7.62e9,
        layers=28,
        hidden_size=3584,
        attention_heads=28,
        kv_heads=4,
        head_dim=128,
        context_tokens=32_768,
        source="Qwen/Qwen2.5-7B-Instruct config.json and model card (Hugging Face)",
    ),
    Model(
        name="qwen2.5-72b",
        label="Qwen2.5 72B",
        hf_id="Qwen/Qwen2.5-72B-Instruct",
        total_params=72.7e9,
        active_params=72.7e9,
        layers=80,
        hidden_size=8192,
        attention_heads=64,
        kv_heads=8,
        head_dim=128,
        context_tokens=32_768,
        source="Qwen/Qwen2.5-72B-Instruct config.json and model card (Hugging Face)",
    ),
    Model(
        name="mixtral-8x7b",
        label="Mixtral 8x7B",
        hf_id="mistralai/Mixtral-8x7B-Instruct-v0.1",
        total_params=46.7e9,
        active_params=12.9e9,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        context_tokens=32_768,
        experts=8,
        experts_per_token=2,
        source="mistralai/Mixtral-8x7B-Instruct-v0.1 config.json; Mistral AI 'Mixtral of experts'",
    ),
    Model(
        name="r1-distill-qwen-7b",
        label="DeepSeek-R1-Distill-Qwen-7B (reasoning)",
        hf_id="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        total_params=7.62e9,
        active_params=7.62e9,
        layers=28,
        hidden_size=3584,
        attention_heads=28,
        kv_heads=4,
        head_dim=128,
        context_tokens=131_072,
        source="deepseek-ai/DeepSeek-R1-Distill-Qwen-7B config.json (Hugging Face)",
    ),
)

HARDWARE: Mapping[str, Hardware] = {hw.name: hw for hw in _HARDWARE}
MODELS: Mapping[str, Model] = {model.name: model for model in _MODELS}


def hardware_get(name: str) -> Hardware:
    """The catalog entry for `name`, or a ValueError listing the known names."""
    try:
        return HARDWARE[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}; known: {sorted(HARDWARE)}") from None


def model_get(name: str) -> Model:
    """The catalog entry for `name`, or a ValueError listing the known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None
