"""Published single-request measurements next to the simulator's figures for the same setups.

`realism_table()` renders the Markdown table in docs/simulator.md; a test renders it again and
compares, so the document cannot drift from the physics.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from advisor.core.catalog import HARDWARE, MODELS
from simulator.engine import Arrival, simulate
from simulator.profile import PRESETS, Profile


@dataclass(frozen=True, slots=True)
class RealismCase:
    """One public measurement at concurrency 1; `published_ttft_ms` is None when not given."""

    setup: str
    profile: Profile
    prompt_tokens: int
    output_tokens: int
    published_ttft_ms: float | None
    published_tpot_ms: float
    source: str


@dataclass(frozen=True, slots=True)
class SimulatedFigures:
    ttft_ms: float
    tpot_ms: float


def _profile(name: str, **overrides: object) -> Profile:
    return dataclasses.replace(PRESETS["llama-8b-h100"], name=name, **overrides)  # type: ignore[arg-type]


_NIM = (
    "NVIDIA NIM LLM benchmarking guide, Performance, Llama-3.3-70b-instruct, NIM 1.8.0, "
    "2 x H100 80G, fp8 TP2 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance)"
)
_LLAMA_70B_FP8_2XH100 = _profile(
    "llama-70b-h100x2-fp8",
    model=MODELS["llama-3.1-70b"],
    num_devices=2,
    weight_dtype="fp8",
    kv_dtype="fp8",
)

REALISM_CASES: tuple[RealismCase, ...] = (
    RealismCase(
        setup="Llama 3.3 70B fp8, 2 x H100 SXM (TensorRT-LLM via NIM)",
        profile=_LLAMA_70B_FP8_2XH100,
        prompt_tokens=5000,
        output_tokens=500,
        published_ttft_ms=406.77,
        published_tpot_ms=18.58,
        source=_NIM + ", 5000 input / 500 output tokens, concurrency 1 (TTFT, ITL)",
    ),
    RealismCase(
        setup="Llama 3.3 70B fp8, 2 x H100 SXM (TensorRT-LLM via NIM)",
        profile=_LLAMA_70B_FP8_2XH100,
        prompt_tokens=500,
        output_tokens=2000,
        published_ttft_ms=47.77,
        published_tpot_ms=18.91,
        source=_NIM + ", 500 input / 2000 output tokens, concurrency 1 (TTFT, ITL)",
    ),
    RealismCase(
        setup="Qwen2.5 0.5B bf16, 1 x L4 (vLLM 0.23.0)",
        profile=_profile("qwen-0.5b-l4", model=MODELS["qwen2.5-0.5b"], hardware=HARDWARE["l4"]),
        prompt_tokens=256,
        output_tokens=128,
        published_ttft_ms=27.0,
        published_tpot_ms=5.1,
        source=(
            "ai.wmx.dev/benchmarks, serving/raw-vllm sweep on GKE, 256 input / 128 output "
            "tokens, --ignore-eos, concurrency 1 (TTFT p50, ITL p50)"
        ),
    ),
    RealismCase(
        setup="Llama 3.1 8B bf16, 1 x A100 SXM 40GB (vLLM 0.23.0)",
        profile=_profile("llama-8b-a100-40gb", hardware=HARDWARE["a100-40gb"]),
        prompt_tokens=1024,
        output_tokens=128,
        published_ttft_ms=None,
        published_tpot_ms=1000.0 / 75.0,
        source=(
            "John Musgrave, 'vLLM throughput-latency sweep on NVIDIA A100' "
            "(johnmusgrave.com), 1024 input / 128 output tokens, --ignore-eos, concurrency 1: "
            "'about 75 tokens/sec' decode, so TPOT of 1000/75 ms; no TTFT given"
        ),
    ),
)


def simulated_figures(case: RealismCase) -> SimulatedFigures:
    """The simulator's TTFT and TPOT for one request alone on an idle server (no network RTT)."""
    (result,) = simulate(case.profile, [Arrival(0.0, case.prompt_tokens, case.output_tokens)])
    ttft_ms = case.profile.request_overhead_ms + result.ttft_s * 1000.0
    return SimulatedFigures(ttft_ms=ttft_ms, tpot_ms=result.tpot_s * 1000.0)


def _ratio(simulated: float, published: float | None) -> str:
    return "" if published is None else f"{simulated / published:.2f}"


def realism_table() -> str:
    """The Markdown table: published figures, simulated figures and their ratios."""
    lines = [
        "| setup | prompt / output tokens | published TTFT ms | simulated TTFT ms | ratio "
        "| published TPOT ms | simulated TPOT ms | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in REALISM_CASES:
        figures = simulated_figures(case)
        published_ttft = (
            "n/a" if case.published_ttft_ms is None else f"{case.published_ttft_ms:.1f}"
        )
        lines.append(
            f"| {case.setup} | {case.prompt_tokens} / {case.output_tokens} | {published_ttft} "
            f"| {figures.ttft_ms:.1f} | {_ratio(figures.ttft_ms, case.published_ttft_ms)} "
            f"| {case.published_tpot_ms:.1f} | {figures.tpot_ms:.1f} "
            f"| {_ratio(figures.tpot_ms, case.published_tpot_ms)} |"
        )
    return "\n".join(lines)


def realism_sources() -> str:
    """One numbered source line per table row, in the same order."""
    return "\n".join(f"{index}. {case.source}" for index, case in enumerate(REALISM_CASES, 1))


def realism_markdown() -> str:
    """The table and its sources, exactly as docs/simulator.md holds them between markers."""
    return f"{realism_table()}\n\nSources, row by row:\n\n{realism_sources()}"
