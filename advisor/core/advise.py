"""The advisor's one entry point: samples in, the report's three blocks and a verdict out.

`advise(records, ...)` fits the latency model, diagnoses the workload's typical request and
prices the levers; `AdvisorResult.to_report_blocks()` gives `latency_model`, `diagnosis` and
`recommendations`, `AdvisorResult.summary_lines()` the plain-words verdict.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from advisor.core.diagnosis import (
    Breakdown,
    Reason,
    confidence_reason,
    data_reasons,
    predict,
    predict_typical,
    slo_status,
)
from advisor.core.fit import (
    ConnectionStats,
    FitError,
    LatencyModel,
    SampleTable,
    build_table,
    connection_stats,
    fit_latency_model,
    resample_groups,
)
from advisor.core.levers import Advice, LeverContext, prompt_caching_saving_ms, recommend
from advisor.core.limits import RooflineCheck, resolve_declared, roofline_check
from advisor.core.render import summary_lines
from advisor.core.samples import (
    CacheProbe,
    Declared,
    RequestLike,
    Sample,
    Slo,
    cache_probe_from_report,
    samples_from_records,
)
from advisor.core.workload import TypicalRequest, Workload, WorkloadError, typical_request

BOOTSTRAP_RESAMPLES = 200
MODEL_ERROR_SD = 0.05
"""Relative error of each predicted part beyond sampling noise (the accuracy runs on the
independent server put decode and queueing within about 5%)."""


@dataclass(frozen=True)
class Fitted:
    """The model fitted on all the data plus its bootstrap replicas (None where a refit failed)."""

    table: SampleTable
    model: LatencyModel
    replicas: tuple[LatencyModel | None, ...]
    connections: ConnectionStats


@dataclass(frozen=True)
class AdvisorResult:
    """Everything the advisor concluded; the report blocks are views of it."""

    request: TypicalRequest | None
    run_valid: bool
    reasons: tuple[Reason, ...]
    fitted: Fitted | None = None
    breakdown: Breakdown | None = None
    confidence: float | None = None
    advice: Advice | None = None
    roofline: RooflineCheck | None = None
    already_applied: tuple[dict[str, Any], ...] = ()
    slo: Slo = field(default_factory=Slo)

    @property
    def bottleneck(self) -> str:
        """The verdict: a part name, or `invalid_run` / `insufficient_data` when withheld."""
        if not self.run_valid:
            return "invalid_run"
        if self.reasons or self.breakdown is None:
            return "insufficient_data"
        return self.breakdown.bottleneck

    @property
    def has_verdict(self) -> bool:
        return self.bottleneck not in ("invalid_run", "insufficient_data")

    def to_report_blocks(self) -> dict[str, Any]:
        """`latency_model`, `diagnosis` and `recommendations`: JSON-serialisable plain data."""
        recommendations = (
            [r.to_dict() for r in self.advice.recommendations]
            if self.advice is not None and self.has_verdict
            else []
        )
        return {
            "latency_model": self._latency_model_block(),
            "diagnosis": self._diagnosis_block(),
            "recommendations": recommendations,
        }

    def summary_lines(self) -> list[str]:
        """The verdict and the top recommendations in plain words, for the command line."""
        return summary_lines(self.to_report_blocks())

    def _latency_model_block(self) -> dict[str, Any] | None:
        if self.fitted is None or self.request is None:
            return None
        return latency_model_block(self.fitted, self.request)

    def _diagnosis_block(self) -> dict[str, Any]:
        request = self.request
        breakdown = self.breakdown
        verdict = self.has_verdict and breakdown is not None
        cached = _cached_tokens(request, self.already_applied)
        block: dict[str, Any] = {
            "valid": self.run_valid,
            "bottleneck": self.bottleneck,
            "ttft_bottleneck": breakdown.ttft_bottleneck if verdict and breakdown else None,
            "breakdown_ms": breakdown.to_dict() if breakdown is not None else None,
            "predicted_ms": (
                {
                    "ttft": round(breakdown.ttft_ms, 3),
                    "tpot": round(breakdown.tpot_ms, 3),
                    "e2e": round(breakdown.e2e_ms, 3),
                }
                if breakdown is not None
                else None
            ),
            "workload": (
                {
                    "prompt_tokens": request.prompt_tokens,
                    "output_tokens": request.output_tokens,
                    "concurrency": request.concurrency,
                    "objective": request.objective,
                    "serving": request.serving,
                    "shared_prefix_tokens": request.shared_prefix_tokens,
                    "cached_prompt_tokens": cached,
                }
                if request is not None
                else None
            ),
            "confidence": None if self.confidence is None else round(self.confidence, 3),
            "reasons": [r.to_dict() for r in self.reasons],
            "already_applied": list(self.already_applied),
            "roofline": self._roofline_block(),
            "slo": (
                slo_status(breakdown, ttft_slo_ms=self.slo.ttft_ms, tpot_slo_ms=self.slo.tpot_ms)
                if breakdown is not None
                else None
            ),
            "provider_questions": (
                [q.question() for q in self.advice.provider_questions]
                if self.advice is not None and self.has_verdict
                else []
            ),
        }
        return block

    def _roofline_block(self) -> dict[str, Any] | None:
        if self.roofline is None:
            return None
        block = self.roofline.to_dict()
        block["advice"] = self.roofline.advice(self.bottleneck)
        return block


def _cached_tokens(request: TypicalRequest | None, applied: Sequence[Mapping[str, Any]]) -> int:
    if request is None:
        return 0
    caching = any(item.get("lever") == "prompt_caching" for item in applied)
    return request.shared_prefix_tokens if caching else 0


def _ci95(values: Sequence[float]) -> list[float] | None:
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return None
    low, high = np.percentile(finite, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


def _model_figures(model: LatencyModel, request: TypicalRequest) -> dict[str, float]:
    """The headline figures of one model at the workload's prompt length (ms, tokens/s)."""
    p = request.prompt_tokens
    prefill_ms = model.prefill.prefill_ms(p)
    return {
        "overhead_ms": model.prefill.overhead_ms,
        "prefill_ms": prefill_ms,
        "prefill_tokens_per_s": p / prefill_ms * 1000.0 if prefill_ms > 0 else math.inf,
        "tpot_ms": model.tpot_ms_at(1, p),
    }


def _e2e_error_pct(model: LatencyModel) -> float:
    """Median absolute error (%) of the model's E2E prediction over the measured points."""
    errors = []
    for point in model.points:
        predicted = predict(
            model,
            prompt_tokens=point.prompt_tokens,
            cached_tokens=point.prompt_tokens - point.uncached_prompt_tokens,
            output_tokens=point.output_tokens,
            concurrency=point.concurrency,
        )
        if point.e2e_ms > 0 and math.isfinite(predicted.e2e_ms):
            errors.append(abs(predicted.e2e_ms - point.e2e_ms) / point.e2e_ms * 100.0)
    return float(np.median(errors)) if errors else math.nan


def _finite_or_none(value: float, digits: int = 4) -> float | None:
    return round(value, digits) if math.isfinite(value) else None


def latency_model_block(fitted: Fitted, request: TypicalRequest) -> dict[str, Any]:
    """The report's `latency_model` block, evaluated at the workload's prompt length."""
    model = fitted.model
    p = request.prompt_tokens
    figures = _model_figures(model, request)
    replicas = [_model_figures(m, request) for m in fitted.replicas if m is not None]
    fit = model.prefill
    return {
        "prompt_tokens": p,
        "overhead_ms": round(figures["overhead_ms"], 3),
        "prefill_ms": round(figures["prefill_ms"], 3),
        "prefill_tokens_per_s": _finite_or_none(figures["prefill_tokens_per_s"], 1),
        "prefill_ms_per_token": round(fit.ms_per_token, 6),
        "prefill_ms_per_token_sq": fit.ms_per_token_sq,
        "prefill_floor_ms": round(fit.floor_ms, 3),
        "tpot_ms": _finite_or_none(figures["tpot_ms"]),
        "tpot_ms_by_concurrency": {
            str(c): _finite_or_none(model.tpot_ms_at(c, p)) for c in model.concurrencies
        },
        "queue_ms_by_concurrency": {
            str(c): _finite_or_none(model.queue_ms_at(c, p)) for c in model.concurrencies
        },
        "output_tokens_per_s_by_concurrency": {
            str(c): _finite_or_none(model.output_tokens_per_s_at(c, p), 2)
            for c in model.concurrencies
        },
        "saturation_concurrency": model.saturation_concurrency(p),
        "ci95": {
            name: _ci95([r[name] for r in replicas])
            for name in ("overhead_ms", "prefill_ms", "prefill_tokens_per_s", "tpot_ms")
        },
        "engine": None if model.engine is None else model.engine.to_dict(),
        "fit_quality": {
            "ttft_r2": round(fit.r2, 5),
            "ttft_residual_sd_ms": round(fit.residual_sd_ms, 3),
            "ttft_outliers": fit.outliers,
            "ttft_samples": fit.n,
            "curvature_used": fit.curvature_used,
            "curvature_p_value": fit.curvature_p_value,
            "floor_lengths": fit.floor_lengths,
            "e2e_median_error_pct": _finite_or_none(_e2e_error_pct(model), 2),
            "samples": int(fitted.table.ttft_ms.size),
            "prompt_tokens_estimated": fitted.table.prompt_tokens_estimated,
            "output_tokens_estimated": fitted.table.output_tokens_estimated,
        },
        "connect_ms_p50": fitted.connections.connect_ms_p50,
        "new_connection_share": round(fitted.connections.new_connection_share, 4),
    }


def bottleneck_confidence(
    bottleneck: str, replicas: Sequence[Breakdown], resamples: int, *, seed: int
) -> float:
    """Share of bootstrap resamples naming `bottleneck` as the largest part.

    Each resample's parts are also scaled by 1 + N(0, 5%), the model's own error: sampling noise
    alone makes two parts 2% apart look certain when the runs are precise. A resample whose
    refit failed counts as disagreeing. In [0, 1]; 1.0 without resamples.
    """
    if resamples == 0:
        return 1.0
    rng = np.random.default_rng(seed + 1)
    agreeing = 0
    for replica in replicas:
        parts = replica.parts()
        jitter = 1.0 + rng.normal(0.0, MODEL_ERROR_SD, size=len(parts))
        scaled = {name: value * j for (name, value), j in zip(parts.items(), jitter, strict=True)}
        agreeing += max(scaled, key=lambda name: scaled[name]) == bottleneck
    return agreeing / resamples


def _successes_by_point(samples: Sequence[Sample]) -> list[tuple[int, int, int]]:
    counts: Counter[tuple[int, int]] = Counter()
    for s in samples:
        if s.warmup:
            continue
        counts[s.concurrency, s.target_prompt_tokens] += int(s.usable)
    return [(c, p, n) for (c, p), n in sorted(counts.items())]


def _fit(table: SampleTable, resamples: int, seed: int) -> Fitted:
    model = fit_latency_model(table)
    rng = np.random.default_rng(seed)
    replicas: list[LatencyModel | None] = []
    for _ in range(resamples):
        rows = resample_groups(table.rows_by_group, rng)
        try:
            replicas.append(
                fit_latency_model(
                    table,
                    rows,
                    curvature=model.prefill.curvature_used,
                    floor_lengths=model.prefill.floor_lengths,
                    engine=model.engine,
                )
            )
        except FitError:
            replicas.append(None)
    return Fitted(table, model, tuple(replicas), connection_stats(table))


def _already_applied(probe: CacheProbe | None, ctx: LeverContext) -> tuple[dict[str, Any], ...]:
    if probe is None or not probe.server_caches:
        return ()
    measured = probe.measured_saving_ms
    uncached_ctx = LeverContext(
        model=ctx.model,
        request=ctx.request,
        cached_tokens=0,
        breakdown=predict_typical(ctx.model, ctx.request, 0),
    )
    return (
        {
            "lever": "prompt_caching",
            "measured_saving_ms": None if measured is None else round(measured, 3),
            "expected_saving_ms": round(prompt_caching_saving_ms(uncached_ctx), 3),
            "evidence": {
                "cold_ttft_ms": probe.cold_ttft_ms,
                "warm_ttft_ms": probe.warm_ttft_ms,
                "warm_cached_tokens": probe.warm_cached_tokens,
                "shared_prefix_tokens": ctx.request.shared_prefix_tokens,
            },
        },
    )


def advise(
    records: Iterable[RequestLike | Sample],
    *,
    run_valid: bool = True,
    cache_probe: CacheProbe | Mapping[str, Any] | None = None,
    workload: Workload | None = None,
    slo: Slo | None = None,
    declared: Declared | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> AdvisorResult:
    """Diagnose a run for a workload and price the levers.

    `records` are the run's per-request records (harness `RequestRecord`s or `Sample`s; warm-up,
    failed and non-sweep requests are filtered here). `cache_probe` is a `CacheProbe` or the
    report's `cache_probe` block. Raises `WorkloadError` or `DeclaredError` (both ValueError)
    for inputs a user must fix; thin or broken data never raises, it withholds the verdict.
    """
    samples = samples_from_records(records)
    workload = workload or Workload()
    slo = slo or Slo()
    probe = cache_probe if not isinstance(cache_probe, Mapping) else None
    if isinstance(cache_probe, Mapping):
        probe = cache_probe_from_report(cache_probe)
    target = resolve_declared(declared or Declared())
    try:
        request = typical_request(workload, samples)
    except WorkloadError as error:
        reason = Reason("no_successes", str(error))
        return AdvisorResult(request=None, run_valid=run_valid, reasons=(reason,), slo=slo)
    try:
        table = build_table(samples)
        fitted = _fit(table, resamples, seed)
    except FitError as error:
        reason = Reason("no_fit", str(error))
        return AdvisorResult(request=request, run_valid=run_valid, reasons=(reason,), slo=slo)
    caches = probe is not None and probe.server_caches is True
    cached_tokens = request.shared_prefix_tokens if caches else 0
    breakdown = predict_typical(fitted.model, request, cached_tokens)
    replicas = [
        (m, predict_typical(m, request, cached_tokens)) for m in fitted.replicas if m is not None
    ]
    confidence = bottleneck_confidence(
        breakdown.bottleneck, [b for _, b in replicas], len(fitted.replicas), seed=seed
    )
    reasons = data_reasons(table, request, _successes_by_point(samples))
    reasons += confidence_reason(confidence, breakdown.bottleneck)

    def context(model: LatencyModel, b: Breakdown) -> LeverContext:
        return LeverContext(
            model=model,
            request=request,
            cached_tokens=cached_tokens,
            breakdown=b,
            slo=slo,
            probe=probe,
            target=target,
            connect_ms_p50=fitted.connections.connect_ms_p50,
            new_connection_share=fitted.connections.new_connection_share,
        )

    ctx = context(fitted.model, breakdown)
    advice = recommend(ctx, [context(m, b) for m, b in replicas])
    roofline = None
    if target is not None:
        roofline = roofline_check(
            target,
            breakdown,
            prompt_tokens=request.prompt_tokens,
            cached_tokens=cached_tokens,
            output_tokens=request.output_tokens,
            concurrency=request.concurrency,
        )
    return AdvisorResult(
        request=request,
        run_valid=run_valid,
        reasons=tuple(reasons),
        fitted=fitted,
        breakdown=breakdown,
        confidence=confidence,
        advice=advice,
        roofline=roofline,
        already_applied=_already_applied(probe, ctx),
        slo=slo,
    )


def advise_run(
    records: Iterable[RequestLike | Sample],
    report: Mapping[str, Any],
    *,
    workload: Workload | None = None,
    slo: Slo | None = None,
    declared: Declared | None = None,
) -> AdvisorResult:
    """`advise` with the run-level inputs read from the harness's report: `valid` and
    `cache_probe` (null when the probe was not run)."""
    return advise(
        records,
        run_valid=bool(report.get("valid", True)),
        cache_probe=report.get("cache_probe"),
        workload=workload,
        slo=slo,
        declared=declared,
    )
