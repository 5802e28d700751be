"""The advisor's quantization and roofline predictions against public measurements.

For each published pair of decode speeds (the same model on the same GPU at batch 1, in bf16/fp16
and quantized), the advisor's predicted TPOT ratio quantized/bf16 is computed exactly as the
`quantization` lever computes it for a declared deployment (`levers.quantized_tpot_ratio`: only
the roofline's share of the measured bf16 TPOT shrinks, by `limits.min_tpot_ms` with the
quantized weight dtype over the declared one; the published bf16 TPOT stands for the measured
one) and set against the published ratio, beside the bytes-alone ratio the lever used before.
A second table gives the roofline's minimum TPOT at peak bandwidth and the MBU each published TPOT
implies (what the advisor's roofline check would report), including the bf16 figures already
cited in docs/simulator.md.

Published figures are data below, each with its source; derived TPOTs are 1000 / tokens per
second. Nothing here is measured on this machine.

Run: .venv/bin/python -m perf.advisor_public
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core import roofline
from advisor.core.catalog import WeightDtype, hardware_get, model_get
from advisor.core.levers import UNDECLARED_INT4_TPOT_RATIO, quantized_tpot_ratio
from advisor.core.limits import Target, decode_context_tokens, min_tpot_ms, resolve_declared
from advisor.core.samples import Declared

WITHIN = 0.25
"""A predicted ratio within this share of the published one counts as agreeing (issue 5)."""

TRT_MODELOPT = (
    "NVIDIA TensorRT Model Optimizer Benchmark Reference, '1.1 Performance' (H100, "
    "nvidia-modelopt v0.15.0, TensorRT-LLM v0.11, batch size 1, speedups against the FP16 "
    "baseline): NVIDIA/TensorRT-Model-Optimizer benchmark.md at commit "
    "45cb1ab2869366a4f95c7577ff231a42b3e687bd (GitHub)"
)
LLM_INFERENCE_BENCH = (
    "Bereket Lemma, llm-inference-bench (vLLM 0.16.0, NVIDIA L4 24GB, greedy, 3 warm-up and "
    "10 measured runs, April 2026; https://bench.bereketlemma.com/ and "
    "https://bereketlemma.com/blog/llm-inference-bench): bereketlemma/llm-inference-bench "
    "results/Data/fp16_results.csv and awq_marlin_results.csv at commit "
    "e3c511995d0d6a0b7b4633f87a7396368cf0a1bc, batch 1, 128 output tokens"
)
NIM_PERFORMANCE = (
    "NVIDIA NIM LLM benchmarking guide, Performance, Llama-3.3-70b-instruct, NIM 1.8.0, "
    "2 x H100 80G, fp8 TP2 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance), "
    "concurrency 1, ITL"
)
MUSGRAVE_A100 = (
    "John Musgrave, 'vLLM throughput-latency sweep on NVIDIA A100' (johnmusgrave.com), "
    "concurrency 1: 'about 75 tokens/sec' decode"
)


def ms_per_token(tokens_per_s: float) -> float:
    return 1000.0 / tokens_per_s


@dataclass(frozen=True)
class QuantPair:
    """One published bf16/quantized pair: same model, same GPU, batch 1."""

    baseline: str
    scheme: str
    hardware: str
    model: str
    quantized: WeightDtype
    prompt_tokens: int
    output_tokens: int
    bf16_tpot_ms: float
    quantized_tpot_ms: float
    source: str
    caveat: str

    @property
    def setup(self) -> str:
        return f"{self.baseline}, {self.scheme}"

    @property
    def published_ratio(self) -> float:
        return self.quantized_tpot_ms / self.bf16_tpot_ms


@dataclass(frozen=True)
class RooflineRow:
    """One published single-request TPOT, for the roofline's minimum and the implied MBU."""

    setup: str
    hardware: str
    model: str
    dtype: WeightDtype
    num_devices: int
    prompt_tokens: int
    output_tokens: int
    published_tpot_ms: float
    source: str


# TensorRT Model Optimizer: tokens/s of the quantized engine and its speedup over FP16 at
# batch 1, so the FP16 tokens/s is tokens/s / speedup (175.42 / 1.26 = 139.2 and
# 213.45 / 1.53 = 139.5: the two rows agree on the baseline within 0.2%). The table gives no
# input/output lengths and times "full batch inference", so the context phase is amortised into
# the tokens/s; 128 / 128 is assumed (at batch 1 the KV cache is under 1% of the bytes read).
# Model: Llama3-8B, the same shape as the catalog's Llama 3.1 8B.
# llm-inference-bench: the tokens_per_second column at batch 1 and 128 output tokens. The FP16
# file's latency column (3587 ms for 128 tokens, 28 ms/token) contradicts its own tokens/s
# (17.9) and would beat the L4's bandwidth limit (48 ms/token for 14.5 GB of weights), so the
# tokens/s column is used; the AWQ file is self-consistent (128 / 2.084 s = 61.4 tokens/s).
# Prompts are short and their length is not stated; 32 tokens is assumed. Mistral-7B-v0.1 has
# the catalog's Mistral 7B v0.3 shape (v0.3 only adds 768 vocabulary rows: +0.1% parameters).
QUANT_PAIRS: tuple[QuantPair, ...] = (
    QuantPair(
        baseline="Llama 3 8B, 1 x H100 SXM, TensorRT-LLM",
        scheme="FP8 (W8A8)",
        hardware="h100-sxm",
        model="llama-3.1-8b",
        quantized="fp8",
        prompt_tokens=128,
        output_tokens=128,
        bf16_tpot_ms=ms_per_token(175.42 / 1.26),
        quantized_tpot_ms=ms_per_token(175.42),
        source=TRT_MODELOPT,
        caveat="tokens/s of whole batch-1 generations; lengths not stated",
    ),
    QuantPair(
        baseline="Llama 3 8B, 1 x H100 SXM, TensorRT-LLM",
        scheme="INT4 AWQ (W4A16)",
        hardware="h100-sxm",
        model="llama-3.1-8b",
        quantized="int4",
        prompt_tokens=128,
        output_tokens=128,
        bf16_tpot_ms=ms_per_token(213.45 / 1.53),
        quantized_tpot_ms=ms_per_token(213.45),
        source=TRT_MODELOPT,
        caveat="tokens/s of whole batch-1 generations; lengths not stated",
    ),
    QuantPair(
        baseline="Mistral 7B, 1 x L4, vLLM 0.16.0",
        scheme="INT4 AWQ-Marlin (W4A16)",
        hardware="l4",
        model="mistral-7b",
        quantized="int4",
        prompt_tokens=32,
        output_tokens=128,
        bf16_tpot_ms=ms_per_token(17.9),
        quantized_tpot_ms=ms_per_token(61.418114129200504),
        source=LLM_INFERENCE_BENCH,
        caveat="FP16 file internally inconsistent; its tokens/s column is used",
    ),
)

# Single-request TPOTs already cited in docs/simulator.md (Realism), for the roofline table.
SIMULATOR_DOC_ROWS: tuple[RooflineRow, ...] = (
    RooflineRow(
        setup="Llama 3.3 70B, 2 x H100 SXM, TensorRT-LLM via NIM (5000 / 500)",
        hardware="h100-sxm",
        model="llama-3.1-70b",
        dtype="fp8",
        num_devices=2,
        prompt_tokens=5000,
        output_tokens=500,
        published_tpot_ms=18.58,
        source=NIM_PERFORMANCE,
    ),
    RooflineRow(
        setup="Llama 3.3 70B, 2 x H100 SXM, TensorRT-LLM via NIM (500 / 2000)",
        hardware="h100-sxm",
        model="llama-3.1-70b",
        dtype="fp8",
        num_devices=2,
        prompt_tokens=500,
        output_tokens=2000,
        published_tpot_ms=18.91,
        source=NIM_PERFORMANCE,
    ),
    RooflineRow(
        setup="Llama 3.1 8B, 1 x A100 SXM 40GB, vLLM (1024 / 128)",
        hardware="a100-40gb",
        model="llama-3.1-8b",
        dtype="bf16",
        num_devices=1,
        prompt_tokens=1024,
        output_tokens=128,
        published_tpot_ms=ms_per_token(75.0),
        source=MUSGRAVE_A100,
    ),
)


def _target(pair: QuantPair) -> Target:
    target = resolve_declared(Declared(hardware=pair.hardware, model=pair.model, dtype="bf16"))
    assert target is not None
    return target


def bytes_ratio(pair: QuantPair) -> float:
    """The roofline's minimum TPOT quantized over bf16: the bytes read per step alone."""
    target = _target(pair)
    quantized_ms = min_tpot_ms(
        target,
        concurrency=1,
        prompt_tokens=pair.prompt_tokens,
        output_tokens=pair.output_tokens,
        weight_dtype=pair.quantized,
    )
    bf16_ms = min_tpot_ms(
        target, concurrency=1, prompt_tokens=pair.prompt_tokens, output_tokens=pair.output_tokens
    )
    return quantized_ms / bf16_ms


def predicted_ratio(pair: QuantPair) -> float:
    """The quantization lever's TPOT ratio for a declared bf16 deployment, at batch 1."""
    target = _target(pair)
    bf16_ms = min_tpot_ms(
        target, concurrency=1, prompt_tokens=pair.prompt_tokens, output_tokens=pair.output_tokens
    )
    return quantized_tpot_ratio(bf16_ms, bf16_ms * bytes_ratio(pair), pair.bf16_tpot_ms)


def roofline_rows() -> list[RooflineRow]:
    """Each published TPOT of the quantized pairs once (the two H100 rows share their FP16
    baseline: the first is kept), then the rows cited in docs/simulator.md."""
    rows: dict[tuple[str, str], RooflineRow] = {}
    for pair in QUANT_PAIRS:
        published: tuple[tuple[WeightDtype, str, float], ...] = (
            ("bf16", "bf16/fp16", pair.bf16_tpot_ms),
            (pair.quantized, pair.scheme, pair.quantized_tpot_ms),
        )
        for dtype, label, tpot_ms in published:
            rows.setdefault(
                (pair.baseline, label),
                RooflineRow(
                    setup=f"{pair.baseline}, {label}",
                    hardware=pair.hardware,
                    model=pair.model,
                    dtype=dtype,
                    num_devices=1,
                    prompt_tokens=pair.prompt_tokens,
                    output_tokens=pair.output_tokens,
                    published_tpot_ms=tpot_ms,
                    source=pair.source,
                ),
            )
    return [*rows.values(), *SIMULATOR_DOC_ROWS]


def roofline_figures(row: RooflineRow) -> tuple[float, float]:
    """Minimum TPOT (ms) at peak bandwidth and compute, and the MBU the published TPOT implies.

    MBU = bytes per decode step / (published TPOT x peak bytes/s), as the advisor's roofline
    check computes it; with several devices the peak is their sum.
    """
    deployment = roofline.Deployment(
        model=model_get(row.model),
        hardware=hardware_get(row.hardware),
        num_devices=row.num_devices,
        weight_dtype=row.dtype,
        mfu=1.0,
        mbu=1.0,
    )
    context = decode_context_tokens(row.prompt_tokens, row.output_tokens)
    min_ms = roofline.decode_step_time_s(deployment, batch_size=1, context_tokens=context) * 1e3
    step_bytes = roofline.decode_step_bytes(deployment, batch_size=1, context_tokens=context)
    mbu = step_bytes / (row.published_tpot_ms / 1e3) / deployment.bytes_per_s
    return min_ms, mbu


def quantization_table() -> list[str]:
    lines = [
        "| setup | published bf16 TPOT ms | published quantized TPOT ms | published ratio "
        "| predicted ratio | predicted / published | TPOT saving: predicted vs published "
        "| bytes-alone ratio / published | undeclared 0.5 / published |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for pair in QUANT_PAIRS:
        published = pair.published_ratio
        predicted = predicted_ratio(pair)
        saving_error = (1.0 - predicted) / (1.0 - published) - 1.0
        verdict = "within" if abs(predicted / published - 1.0) <= WITHIN else "outside"
        undeclared = (
            f"{UNDECLARED_INT4_TPOT_RATIO / published:.2f}" if pair.quantized == "int4" else "n/a"
        )
        lines.append(
            f"| {pair.setup} | {pair.bf16_tpot_ms:.2f} | {pair.quantized_tpot_ms:.2f} "
            f"| {published:.3f} | {predicted:.3f} | {predicted / published:.2f} ({verdict} "
            f"±{WITHIN:.0%}) | {1.0 - predicted:.0%} vs {1.0 - published:.0%} "
            f"({saving_error:+.0%}) | {bytes_ratio(pair) / published:.2f} | {undeclared} |"
        )
    return lines


def roofline_table() -> list[str]:
    lines = [
        "| setup | catalog dtype | devices | prompt / output | roofline min TPOT ms "
        "| published TPOT ms | implied MBU |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in roofline_rows():
        min_ms, mbu = roofline_figures(row)
        lines.append(
            f"| {row.setup} | {row.dtype} | {row.num_devices} "
            f"| {row.prompt_tokens} / {row.output_tokens} | {min_ms:.2f} "
            f"| {row.published_tpot_ms:.2f} | {mbu:.2f} |"
        )
    return lines


def sources() -> list[str]:
    seen: list[str] = []
    for source in [pair.source for pair in QUANT_PAIRS] + [r.source for r in SIMULATOR_DOC_ROWS]:
        if source not in seen:
            seen.append(source)
    lines = [f"{number}. {source}" for number, source in enumerate(seen, start=1)]
    lines += [f"- {pair.setup}: {pair.caveat}" for pair in QUANT_PAIRS]
    return lines


def main() -> None:
    print("Quantized/bf16 TPOT ratio at batch 1, published and predicted\n")
    print("\n".join(quantization_table()))
    print("\nRoofline minimum TPOT and implied MBU (one request)\n")
    print("\n".join(roofline_table()))
    print("\nSources\n")
    print("\n".join(sources()))


if __name__ == "__main__":
    main()
