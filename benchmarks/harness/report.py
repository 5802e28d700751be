"""The public JSON report (schema_version "1.0"): points, statistics, warnings and validity."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from benchmarks.harness import HARNESS_VERSION
from benchmarks.harness.config import EndpointConfig, Thresholds
from benchmarks.harness.loadgen import ClientLoad
from benchmarks.harness.metrics import WARNING_CODES
from benchmarks.harness.plan import Plan, PlanPoint
from benchmarks.harness.records import RequestRecord
from benchmarks.harness.stats import summarize

SCHEMA_VERSION = "1.0"
# Warnings that say the client, not the server, may have produced the numbers.
CLIENT_SIDE_WARNINGS = frozenset(code for code, (invalid, _) in WARNING_CODES.items() if invalid)
# Top-level names the advisor fills in; the harness never writes them.
RESERVED_BLOCKS = ("latency_model", "diagnosis", "recommendations")
STATISTIC_METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "ttfa_ms", "ttfb_ms")


def warning(code: str, message: str, point: int | None = None) -> dict[str, Any]:
    """`point` is the index in `points`, None for the run as a whole."""
    return {"code": code, "message": message, "point": point}


def point_report(
    point: PlanPoint,
    records: Sequence[RequestRecord],
    *,
    plan: Plan,
    load: ClientLoad,
    index: int,
    thresholds: Thresholds,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One entry of `points` plus its warnings, from the point's measured (non-warm-up) records."""
    measured = [record for record in records if not record.warmup]
    good = [record for record in measured if record.outcome == "success"]
    data: dict[str, Any] = {
        "target_prompt_tokens": point.target_prompt_tokens,
        "target_output_tokens": point.target_output_tokens,
        "concurrency": point.concurrency,
        "rate_per_s": plan.rate_per_s,
        "requests": len(measured),
        "succeeded": len(good),
        "incomplete": sum(record.outcome == "incomplete" for record in measured),
        "errors": dict(
            Counter(r.error_code or "unknown" for r in measured if r.outcome != "success")
        ),
        "prompt_tokens": _mean([r.prompt_tokens for r in good]),
        "output_tokens": _mean([r.output_tokens for r in good]),
        "cached_prompt_tokens": _mean([r.cached_prompt_tokens for r in good]),
        "tokens_estimated": any(record.tokens_estimated for record in good),
    }
    for name in STATISTIC_METRICS:
        data[name] = summarize(_values(good, name), seed=plan.seed)
    data["client_delay_ms"] = summarize(
        [r.client_delay_ms for r in measured if r.client_delay_ms is not None], seed=plan.seed
    )
    window_s = _window_s(measured)
    total_tokens = sum(record.output_tokens or 0 for record in good)
    data["duration_s"] = round(window_s, 3)
    data["output_tokens_per_s"] = round(total_tokens / window_s, 3) if window_s > 0 else None
    data["goodput"] = goodput(measured, plan.slo_ttft_ms, plan.slo_tpot_ms)
    data["client"] = {
        "cpu_share": round(load.cpu_share, 3),
        "loop_lag_p99_ms": round(load.loop_lag_p99_ms, 3),
        "loop_lag_max_ms": round(load.loop_lag_max_ms, 3),
    }
    return data, point_warnings(data, measured, load, index=index, thresholds=thresholds)


def _values(records: Sequence[RequestRecord], name: str) -> list[float]:
    if name == "itl_ms":
        return [gap for record in records for gap in record.itl_ms]
    values = (getattr(record, name) for record in records)
    return [value for value in values if value is not None]


def _mean(values: Sequence[int | None]) -> float | None:
    known = [value for value in values if value is not None]
    return round(statistics.fmean(known), 1) if known else None


def _window_s(records: Sequence[RequestRecord]) -> float:
    """From the first measured request's due time to the last token of any measured request."""
    ends = [r.sent_s + r.e2e_ms / 1000 for r in records if r.sent_s is not None and r.e2e_ms]
    if not ends:
        return 0.0
    return max(ends) - min(record.scheduled_s for record in records)


def goodput(
    records: Sequence[RequestRecord], slo_ttft_ms: float | None, slo_tpot_ms: float | None
) -> float | None:
    """Share of all requests meeting both SLOs; failures miss; undefined TPOT (1 token) meets."""
    if not records or (slo_ttft_ms is None and slo_tpot_ms is None):
        return None

    def meets(record: RequestRecord) -> bool:
        if record.outcome != "success" or record.ttft_ms is None:
            return False
        if slo_ttft_ms is not None and record.ttft_ms > slo_ttft_ms:
            return False
        tpot_ms = record.tpot_ms
        return slo_tpot_ms is None or tpot_ms is None or tpot_ms <= slo_tpot_ms

    return round(sum(meets(record) for record in records) / len(records), 4)


def point_warnings(
    data: dict[str, Any],
    measured: Sequence[RequestRecord],
    load: ClientLoad,
    *,
    index: int,
    thresholds: Thresholds,
) -> list[dict[str, Any]]:
    """The stable warning codes a point can raise; see `metrics.WARNING_CODES`."""
    found: list[dict[str, Any]] = []
    good = [record for record in measured if record.outcome == "success"]

    def add(code: str, message: str) -> None:
        found.append(warning(code, message, index))

    if len(good) < thresholds.min_samples:
        add(
            "too_few_samples",
            f"{len(good)} successful requests, fewer than {thresholds.min_samples}",
        )
    estimated = sum(record.tokens_estimated for record in good)
    if estimated:
        add("usage_missing", f"{estimated} requests had no usage; output tokens counted as chunks")
    counted = [r for r in good if not r.tokens_estimated and r.output_tokens]
    chunks = sum(len(record.chunk_offsets_us) for record in counted)
    tokens = sum(record.output_tokens or 0 for record in counted)
    if tokens and abs(chunks / tokens - 1) > thresholds.chunk_usage_tolerance:
        add(
            "chunk_usage_mismatch",
            f"{chunks} token-carrying chunks for {tokens} tokens: ITL is per chunk, not per token",
        )
    target, measured_tokens = data["target_prompt_tokens"], data["prompt_tokens"]
    if (
        measured_tokens is not None
        and abs(measured_tokens / target - 1) > thresholds.prompt_tolerance
    ):
        add("prompt_length_missed", f"prompts averaged {measured_tokens} tokens for {target}")
    if load.loop_lag_p99_ms > thresholds.loop_lag_p99_ms:
        add("loop_lag", f"event loop lag p99 {load.loop_lag_p99_ms:.1f} ms: the client was busy")
    if load.cpu_share > thresholds.cpu_share:
        add("client_saturated", f"the client's loop thread used {load.cpu_share:.0%} of a core")
    delays_ms = [
        (record.client_delay_ms or 0.0) - (record.connect_ms or 0.0)
        for record in measured
        if record.sent_s is not None
    ]
    if delays_ms:
        delay_p90_ms = float(sorted(delays_ms)[int(0.9 * (len(delays_ms) - 1))])
        if delay_p90_ms > thresholds.client_delay_p90_ms:
            add("client_delay", f"requests left {delay_p90_ms:.1f} ms late (p90): load fell behind")
    return found


def build_report(
    *,
    endpoint: EndpointConfig,
    plan_data: dict[str, Any],
    started: str,
    finished: str,
    points: list[dict[str, Any]],
    warnings: list[dict[str, Any]],
    cache_probe: dict[str, Any] | None,
) -> dict[str, Any]:
    """The top-level report; `valid` is false when any client-side warning was raised."""
    return {
        "schema_version": SCHEMA_VERSION,
        "endpoint": {"base_url": endpoint.base_url, "model": endpoint.model, "api": endpoint.api},
        "started": started,
        "finished": finished,
        "harness_version": HARNESS_VERSION,
        "plan": plan_data,
        "valid": not any(item["code"] in CLIENT_SIDE_WARNINGS for item in warnings),
        "warnings": warnings,
        "points": points,
        "cache_probe": cache_probe,
    }
