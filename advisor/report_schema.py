"""The advisor's report blocks as data (name, unit, definition), beside the harness's.

`python -m advisor.report_schema --write` regenerates docs/report-schema.md with both; a test
fails when a field the advisor writes has no entry here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.harness.metrics import (
    SCHEMA_DOC_PATH,
    Metric,
    metric_table,
    render_report_schema,
)


def _m(name: str, unit: str, definition: str, type_: str = "number") -> Metric:
    return Metric(name, unit, definition, type_)


_AT_P = "at the workload's prompt length"
_CI = "[lo, hi]: 95% bootstrap interval (200 resamples of the run's requests), or null"

ADVISOR_SECTIONS: dict[str, tuple[Metric, ...]] = {
    "latency_model": (
        _m(
            "prompt_tokens",
            "tokens",
            "the prompt length the figures below are evaluated at",
            "integer",
        ),
        _m(
            "overhead_ms",
            "ms",
            "fitted TTFT of an empty prompt at the lowest concurrency (intercept)",
        ),
        _m("prefill_ms", "ms", f"fitted prefill time of the whole prompt {_AT_P}"),
        _m("prefill_tokens_per_s", "tokens/s", f"prompt tokens / fitted prefill time, {_AT_P}"),
        _m("prefill_ms_per_token", "ms/token", "linear term of the TTFT fit"),
        _m(
            "prefill_ms_per_token_sq",
            "ms/token²",
            "curvature term (attention); 0 unless the data demands it",
        ),
        _m(
            "prefill_floor_ms",
            "ms",
            "TTFT below which short prompts do not go (a fixed cost in the fit)",
        ),
        _m("tpot_ms", "ms/token", f"TPOT at concurrency 1, {_AT_P} (interpolated)"),
        _m(
            "tpot_ms_by_concurrency",
            "ms/token",
            f"TPOT at each measured concurrency, {_AT_P}",
            "map",
        ),
        _m(
            "queue_ms_by_concurrency",
            "ms",
            "TTFT at c minus TTFT at concurrency 1, same prompt length",
            "map",
        ),
        _m(
            "output_tokens_per_s_by_concurrency",
            "tokens/s",
            "aggregate throughput at each measured concurrency",
            "map",
        ),
        _m(
            "saturation_concurrency",
            "requests",
            "the concurrency past which throughput stops growing; null when no knee was measured",
            "integer",
        ),
        _m("ci95", "", "confidence intervals of the main figures", "object"),
        _m(
            "engine",
            "",
            "how the requests share the server: slots and the neighbours' prefills "
            "(docs/advisor.md, Shared engine); levers are priced with it",
            "object",
        ),
        _m("fit_quality", "", "how well the model explains the run", "object"),
        _m(
            "connect_ms_p50",
            "ms",
            "median `connect_ms` of requests that opened a connection; null when all reused one",
        ),
        _m(
            "new_connection_share",
            "share",
            "share of measured requests that opened a new connection",
        ),
    ),
    "latency_model.ci95": (
        _m("overhead_ms", "ms", _CI, "array"),
        _m("prefill_ms", "ms", _CI, "array"),
        _m("prefill_tokens_per_s", "tokens/s", _CI, "array"),
        _m("tpot_ms", "ms/token", _CI, "array"),
    ),
    "latency_model.engine": (
        _m(
            "slots",
            "requests",
            "requests the server runs at once, as the closed-loop waits imply; null when no "
            "measured concurrency filled them",
        ),
        _m(
            "interference",
            "share",
            "share of a neighbour's prefill that a running request waits for (about 1 with "
            "chunked prefill in shared steps, 0 when prefill runs apart)",
        ),
        _m(
            "batch_growth",
            "share",
            "decode step growth per extra sequence in the batch, as a share of the lone step",
        ),
        _m("rms_log_error", "", "RMS log error of the engine's E2E over the points it fits"),
        _m("points", "points", "sweep points above the lowest concurrency it fits", "integer"),
    ),
    "latency_model.fit_quality": (
        _m("ttft_r2", "", "R² of the TTFT fit at the lowest concurrency"),
        _m("ttft_residual_sd_ms", "ms", "robust spread of the TTFT residuals"),
        _m(
            "ttft_outliers",
            "requests",
            "requests the robust fit down-weighted as outliers",
            "integer",
        ),
        _m("ttft_samples", "requests", "requests in the TTFT fit", "integer"),
        _m("curvature_used", "", "whether the quadratic (attention) term was kept", "boolean"),
        _m("curvature_p_value", "", "p-value of the curvature term's test; null when not tested"),
        _m(
            "floor_lengths",
            "prompt lengths",
            "short prompt lengths explained by the floor, not the slope",
            "integer",
        ),
        _m(
            "e2e_median_error_pct",
            "%",
            "median error of the model's E2E prediction over the run's requests",
        ),
        _m(
            "samples", "requests", "successful measured requests the model was fitted on", "integer"
        ),
        _m(
            "prompt_tokens_estimated",
            "requests",
            "requests without `usage.prompt_tokens` (target used)",
            "integer",
        ),
        _m(
            "output_tokens_estimated",
            "requests",
            "requests whose output tokens were counted as chunks",
            "integer",
        ),
    ),
    "diagnosis": (
        _m("valid", "", "the run's validity; false gives `bottleneck: invalid_run`", "boolean"),
        _m(
            "bottleneck",
            "",
            "`prefill`, `decode`, `queueing`, `overhead`, `insufficient_data` or `invalid_run`",
            "string",
        ),
        _m(
            "ttft_bottleneck",
            "",
            "the largest of overhead, queueing and prefill (why it is slow to start); "
            "null without a verdict",
            "string",
        ),
        _m(
            "breakdown_ms",
            "ms",
            "the typical request's predicted latency split into parts",
            "object",
        ),
        _m("predicted_ms", "ms", "the typical request's predicted TTFT, TPOT and E2E", "object"),
        _m("workload", "", "the typical request the diagnosis is about", "object"),
        _m("confidence", "share", "share of 200 bootstrap resamples giving the same bottleneck"),
        _m("reasons", "", "why there is no verdict (`{code, message}`); empty with one", "array"),
        _m(
            "already_applied",
            "",
            "levers the server already applies, with their measured saving",
            "array",
        ),
        _m(
            "roofline",
            "",
            "the endpoint against its declared hardware; null unless hardware, model and dtype "
            "are all declared",
            "object",
        ),
        _m(
            "slo",
            "",
            "per phase (`ttft`, `tpot`): `slo_ms`, `predicted_ms`, `met`; null without SLOs",
            "object",
        ),
        _m(
            "provider_questions",
            "",
            "on `managed_api`: levers only the provider can apply, as questions",
            "array",
        ),
    ),
    "diagnosis.breakdown_ms": (
        _m("overhead", "ms", "the fitted intercept: network, TLS, HTTP, scheduling"),
        _m("queueing", "ms", "`queue_ms` interpolated at the target concurrency"),
        _m("prefill", "ms", "fitted prefill time of the prompt's uncached tokens"),
        _m("decode", "ms", "(N - 1) x `tpot_ms` at the target concurrency and prompt length"),
        _m("reasoning", "ms", "reasoning models only: the part of decode spent thinking"),
        _m("ttfa", "ms", "reasoning models only: predicted time to the first visible answer"),
    ),
    "diagnosis.predicted_ms": (
        _m("ttft", "ms", "overhead + queueing + prefill"),
        _m("tpot", "ms/token", "TPOT at the target concurrency and prompt length"),
        _m("e2e", "ms", "the sum of the parts"),
    ),
    "diagnosis.workload": (
        _m("prompt_tokens", "tokens", "typical prompt length", "integer"),
        _m("output_tokens", "tokens", "typical output length", "integer"),
        _m("concurrency", "requests", "target concurrency", "integer"),
        _m("objective", "", "`latency` or `throughput`", "string"),
        _m("serving", "", "`self_hosted` or `managed_api`", "string"),
        _m("shared_prefix_tokens", "tokens", "the prompts' common prefix", "integer"),
        _m(
            "cached_prompt_tokens",
            "tokens",
            "prompt tokens the server's cache serves (when it caches)",
            "integer",
        ),
    ),
    "diagnosis.reasons[]": (
        _m("code", "", "stable reason code", "string"),
        _m("message", "", "for people; not stable", "string"),
    ),
    "diagnosis.already_applied[]": (
        _m("lever", "", "lever code from the glossary", "string"),
        _m(
            "measured_saving_ms",
            "ms",
            "cold minus warm TTFT of the cache probe; null when unmeasured",
        ),
        _m("expected_saving_ms", "ms", "what the lever saves the typical request"),
        _m("evidence", "", "the numbers it comes from", "object"),
    ),
    "diagnosis.provider_questions[]": (
        _m("lever", "", "lever code from the glossary", "string"),
        _m("question", "", "what to ask the provider", "string"),
        _m("expected_saving_ms", "ms", "what the lever would save the typical request"),
        _m("evidence", "", "the numbers it comes from", "object"),
    ),
    "diagnosis.roofline": (
        _m("hardware", "", "declared hardware (catalog name)", "string"),
        _m("model", "", "declared model (catalog name)", "string"),
        _m("dtype", "", "declared weight dtype", "string"),
        _m("devices_assumed", "devices", "devices the roofline assumes", "integer"),
        _m(
            "min_ttft_ms",
            "ms",
            "theoretical minimum prefill time of the typical prompt at peak FLOP/s",
        ),
        _m("min_tpot_ms", "ms/token", "theoretical minimum TPOT at peak memory bandwidth"),
        _m("mfu", "share", "achieved share of peak FLOP/s in prefill"),
        _m("mbu", "share", "achieved share of peak memory bandwidth in decode"),
        _m("prefill_verdict", "", "`near_limit` or `far_below`", "string"),
        _m("decode_verdict", "", "`near_limit` or `far_below`", "string"),
        _m("advice", "", "what the roofline says to do, in words", "string"),
    ),
    "recommendations[]": (
        _m("lever", "", "lever code from the glossary", "string"),
        _m(
            "expected_saving_ms",
            "ms",
            "saving for the typical request; negative when the lever costs latency",
        ),
        _m("saving_share", "share", "expected saving / predicted E2E"),
        _m("throughput_change_pct", "%", "expected change in aggregate output tokens/s"),
        _m(
            "confidence",
            "share",
            "how sure the lever's assumptions are (a prior per lever) x the share of bootstrap "
            "resamples whose estimate agrees within 25%",
        ),
        _m("evidence", "", "the numbers it comes from", "object"),
        _m("how", "", "what to change", "string"),
        _m(
            "recommended_concurrency",
            "requests",
            "`batching` only: the concurrency it recommends",
            "integer",
        ),
    ),
}


def render_advisor_sections() -> list[str]:
    """The Markdown tables of the advisor's blocks, one section each."""
    return [
        "\n".join([f"### `{path}`", "", *metric_table(metrics)])
        for path, metrics in ADVISOR_SECTIONS.items()
    ]


def render_full_report_schema() -> str:
    return render_report_schema(render_advisor_sections())


def main(argv: Sequence[str]) -> int:
    text = render_full_report_schema()
    if "--write" in argv:
        SCHEMA_DOC_PATH.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
