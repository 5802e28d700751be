"""The advisor's verdict in plain words, from the report blocks (so a saved report renders too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOP_RECOMMENDATIONS = 3

_PHASE_WORDS = {
    "overhead": "overhead (network, TLS, HTTP, scheduling)",
    "queueing": "queueing (waiting for a free slot on the server)",
    "prefill": "prefill (reading the prompt)",
    "decode": "decode (writing the answer)",
}
_LEVER_WORDS = {
    "prompt_caching": "prompt caching",
    "shorter_prompt": "a shorter prompt",
    "output_cap": "an output cap",
    "smaller_model": "a smaller model",
    "reasoning_budget": "a reasoning budget",
    "batching": "batching",
    "quantization": "quantization",
    "speculative_decoding": "speculative decoding",
    "scale_out": "scaling out",
    "reduce_overhead": "less overhead",
}


def _ms(value: float) -> str:
    return f"{value:,.0f} ms" if abs(value) >= 10 else f"{value:.1f} ms"


def _verdict_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    bottleneck = diagnosis["bottleneck"]
    if bottleneck == "invalid_run":
        return [
            "Advisor: no verdict, the run is invalid (the client limited the measurement; see "
            "the warnings). Fix them and run again."
        ]
    if bottleneck == "insufficient_data":
        lines = ["Advisor: no verdict, the data cannot support one:"]
        lines += [f"  - {reason['message']}" for reason in diagnosis["reasons"]]
        return lines
    parts: Mapping[str, float] = diagnosis["breakdown_ms"]
    predicted: Mapping[str, float] = diagnosis["predicted_ms"]
    e2e_ms = predicted["e2e"]
    share = parts[bottleneck] / e2e_ms if e2e_ms > 0 else 0.0
    workload = diagnosis["workload"]
    start_or_write = "slow to write" if bottleneck == "decode" else "slow to start"
    ttft_part = diagnosis["ttft_bottleneck"]
    lines = [
        f"Advisor: {bottleneck}-bound ({start_or_write}), confidence "
        f"{diagnosis['confidence']:.0%}. {_PHASE_WORDS[bottleneck].capitalize()} takes "
        f"{_ms(parts[bottleneck])} of {_ms(e2e_ms)} ({share:.0%}).",
        f"  Typical request: {workload['prompt_tokens']} prompt tokens, "
        f"{workload['output_tokens']} output tokens, concurrency {workload['concurrency']}.",
        "  Breakdown: " + ", ".join(f"{name} {_ms(parts[name])}" for name in _PHASE_WORDS) + ".",
        f"  First token after {_ms(predicted['ttft'])}, mostly {ttft_part} "
        f"({_ms(parts[ttft_part])}); then {predicted['tpot']:.1f} ms per token.",
    ]
    if "reasoning" in parts:
        lines.append(
            f"  Thinking takes {_ms(parts['reasoning'])} of the {_ms(parts['ttfa'])} wait for "
            "the first visible answer."
        )
    return lines


def _context_lines(diagnosis: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for phase, status in (diagnosis.get("slo") or {}).items():
        met = "met" if status["met"] else "MISSED"
        lines.append(
            f"  SLO {phase.upper()}: predicted {_ms(status['predicted_ms'])} against "
            f"{_ms(status['slo_ms'])}: {met}."
        )
    roofline = diagnosis.get("roofline")
    if roofline:
        utilisation = ", ".join(
            f"{name.upper()} {roofline[name]:.0%}"
            for name in ("mfu", "mbu")
            if roofline[name] is not None
        )
        lines.append(
            f"  Roofline ({roofline['model']} {roofline['dtype']} on {roofline['hardware']}): "
            f"at least {_ms(roofline['min_ttft_ms'])} of prefill and "
            f"{roofline['min_tpot_ms']:.1f} ms per token; achieved {utilisation}."
        )
        if roofline.get("advice"):
            lines.append(f"  {roofline['advice']}")
    for applied in diagnosis.get("already_applied", []):
        measured = applied.get("measured_saving_ms")
        saved = f", saving {_ms(measured)} on a repeated prompt" if measured is not None else ""
        lines.append(
            f"  Already applied: {_LEVER_WORDS.get(applied['lever'], applied['lever'])}{saved}."
        )
    return lines


def _recommendation_lines(
    recommendations: list[Mapping[str, Any]], questions: list[Mapping[str, Any]]
) -> list[str]:
    lines: list[str] = []
    if recommendations:
        lines.append("Top recommendations:")
    for rank, item in enumerate(recommendations[:TOP_RECOMMENDATIONS], start=1):
        saving = item["expected_saving_ms"]
        effect = (
            f"saves about {_ms(saving)} ({item['saving_share']:.0%})"
            if saving >= 0
            else f"costs about {_ms(-saving)} per request"
        )
        lines.append(
            f"  {rank}. {_LEVER_WORDS.get(item['lever'], item['lever'])}: {effect}, throughput "
            f"{item['throughput_change_pct']:+.0f}%, confidence {item['confidence']:.0%}. "
            f"{item['how']}"
        )
    if questions:
        lines.append("Questions for the provider:")
        lines += [f"  - {q['question']}" for q in questions[:TOP_RECOMMENDATIONS]]
    return lines


def summary_lines(blocks: Mapping[str, Any]) -> list[str]:
    """Lines for the command line: verdict, breakdown, SLOs, roofline, top recommendations."""
    diagnosis = blocks["diagnosis"]
    lines = _verdict_lines(diagnosis)
    if diagnosis["bottleneck"] in ("invalid_run", "insufficient_data"):
        return lines
    lines += _context_lines(diagnosis)
    lines += _recommendation_lines(
        list(blocks.get("recommendations", [])), list(diagnosis.get("provider_questions", []))
    )
    return lines
