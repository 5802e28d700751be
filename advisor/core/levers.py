"""The glossary's levers: what each would save the typical request, with its evidence.

Every estimator is one pure function of a `LeverContext`; the bootstrap reruns it on resampled
models to say how stable the estimate is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from advisor.core import roofline
from advisor.core.catalog import MODELS, Model, WeightDtype
from advisor.core.diagnosis import Breakdown, predict
from advisor.core.engine import EngineFit
from advisor.core.fit import LatencyModel
from advisor.core.limits import Target, min_tpot_ms
from advisor.core.samples import CacheProbe, Slo
from advisor.core.workload import TypicalRequest

Who = Literal["anyone", "self_hosted"]

CUT_SHARE = 0.25
"""`shorter_prompt` and `output_cap` are priced for a cut of this share of the tokens."""
LATENCY_HEADROOM = 0.2
"""With objective latency, `batching` accepts concurrencies whose TPOT and E2E grow at most
this much (TPOT flat: batching headroom; E2E flat: no queueing yet)."""
THROUGHPUT_PLATEAU = 0.95
"""`batching` picks the lowest concurrency reaching this share of the best throughput."""
SAVING_TOLERANCE = 0.25
"""A bootstrap estimate within this share of the point estimate counts as agreeing."""
MIN_SAVING_SHARE = 0.01
"""Levers saving less than this share of E2E (and under 1 ms) are left out as noise."""
OVERHEAD_FLOOR_MS = 10.0
"""Below this overhead, moving closer or reusing connections is not worth advising."""
UNDECLARED_INT4_TPOT_RATIO = 0.5
"""Without a declared model: int4 weights roughly halve a memory-bound bf16 TPOT in practice."""
SPECULATIVE_DRAFT_TOKENS = 4
SPECULATIVE_ACCEPTANCE = 0.6
SPECULATIVE_STEP_COST = 1.3
"""A draft-and-verify step costs this many plain decode steps (draft model plus verification)."""
SMALLER_MODEL_MAX_RATIO = 0.6
"""`smaller_model` proposes a model of the same family with at most this share of parameters."""


@dataclass(frozen=True)
class Lever:
    code: str
    who: Who
    provider_question: str


LEVERS: dict[str, Lever] = {
    lever.code: lever
    for lever in (
        Lever("prompt_caching", "anyone", ""),
        Lever("shorter_prompt", "anyone", ""),
        Lever("output_cap", "anyone", ""),
        Lever("smaller_model", "anyone", ""),
        Lever("reasoning_budget", "anyone", ""),
        Lever(
            "batching",
            "self_hosted",
            "Can we send more requests at once (a higher rate or concurrency limit, a batch API)?",
        ),
        Lever(
            "quantization",
            "self_hosted",
            "Is an fp8 or int4 variant of this model served, and how does its quality compare?",
        ),
        Lever(
            "speculative_decoding",
            "self_hosted",
            "Is speculative decoding enabled for this model?",
        ),
        Lever(
            "scale_out",
            "self_hosted",
            "Can you reserve more capacity (provisioned throughput) so requests stop queueing?",
        ),
        Lever("reduce_overhead", "anyone", ""),
    )
}


@dataclass(frozen=True)
class LeverContext:
    """Everything an estimator reads. `cached_tokens` are prompt tokens the server already
    serves from its cache for the typical request."""

    model: LatencyModel
    request: TypicalRequest
    cached_tokens: int
    breakdown: Breakdown
    slo: Slo = field(default_factory=Slo)
    probe: CacheProbe | None = None
    target: Target | None = None
    connect_ms_p50: float | None = None
    new_connection_share: float = 0.0

    def at_concurrency(self, concurrency: float) -> Breakdown:
        return predict(
            self.model,
            prompt_tokens=self.request.prompt_tokens,
            cached_tokens=self.cached_tokens,
            output_tokens=self.request.output_tokens,
            concurrency=concurrency,
        )

    def tokens_per_s(self, breakdown: Breakdown, concurrency: float) -> float:
        """Closed-loop output tokens/s at that concurrency (Little's law on the prediction)."""
        return concurrency * self.request.output_tokens / breakdown.e2e_ms * 1000.0

    @property
    def uncached_tokens(self) -> float:
        return float(max(self.request.prompt_tokens - self.cached_tokens, 0))

    @property
    def engine(self) -> EngineFit:
        return self.model.engine or EngineFit(overhead_ms=self.breakdown.overhead_ms)

    def tpot_alone_ms(self, prompt_tokens: float) -> float:
        """TPOT (ms) at the lowest measured concurrency: the decode step without neighbours."""
        return self.model.tpot_ms_at(self.model.lowest_concurrency, prompt_tokens)


@dataclass(frozen=True)
class Estimate:
    """A lever's effect on the typical request. `saving_ms` < 0 means it costs latency."""

    saving_ms: float
    how: str
    evidence: dict[str, Any]
    prior_confidence: float
    throughput_change_pct: float | None = None
    recommended_concurrency: int | None = None

    def agrees_with(self, other: Estimate | None) -> bool:
        if other is None:
            return False
        if self.recommended_concurrency is not None:
            return other.recommended_concurrency == self.recommended_concurrency
        tolerance = max(SAVING_TOLERANCE * abs(self.saving_ms), 1.0)
        return abs(other.saving_ms - self.saving_ms) <= tolerance


def _r(value: float) -> float:
    return round(value, 3)


def engine_saving_ms(
    ctx: LeverContext,
    *,
    prefill_ms: float | None = None,
    tpot_factor: float = 1.0,
    tpot_alone_ms: float | None = None,
    decode_steps: float | None = None,
    overhead_ms: float | None = None,
) -> float:
    """E2E saving (ms) of a change applied to the typical request and its identical neighbours.

    The fitted engine (`engine.py`: slots, the neighbours' prefills, batch growth) predicts the
    E2E before and after; the saving is the difference. At the lowest concurrency the engine is
    the request alone, so a lever saves exactly its own change.
    """
    b = ctx.breakdown
    request = ctx.request
    base_tpot_ms = ctx.tpot_alone_ms(request.prompt_tokens)
    base_steps = max(request.output_tokens - 1.0, 0.0)
    before_ms = ctx.engine.e2e_ms(
        concurrency=request.concurrency,
        prefill_ms=b.prefill_ms,
        decode_steps=base_steps,
        tpot_alone_ms=base_tpot_ms,
        overhead_ms=b.overhead_ms,
    )
    after_ms = ctx.engine.e2e_ms(
        concurrency=request.concurrency,
        prefill_ms=b.prefill_ms if prefill_ms is None else prefill_ms,
        decode_steps=base_steps if decode_steps is None else decode_steps,
        tpot_alone_ms=(base_tpot_ms if tpot_alone_ms is None else tpot_alone_ms) * tpot_factor,
        overhead_ms=b.overhead_ms if overhead_ms is None else overhead_ms,
    )
    return before_ms - after_ms


def _fewer_tokens_saving_ms(ctx: LeverContext, removed_tokens: float, **more: float) -> float:
    """Saving of prefilling `removed_tokens` fewer tokens, for this request and its neighbours."""
    remaining = max(ctx.uncached_tokens - removed_tokens, 0.0)
    return engine_saving_ms(ctx, prefill_ms=ctx.model.prefill.prefill_ms(remaining), **more)


def _own_prefill_saving_ms(ctx: LeverContext, removed_tokens: float) -> float:
    fit = ctx.model.prefill
    remaining = max(ctx.uncached_tokens - removed_tokens, 0.0)
    return fit.prefill_ms(ctx.uncached_tokens) - fit.prefill_ms(remaining)


def prompt_caching_saving_ms(ctx: LeverContext) -> float:
    """E2E saving (ms) once the shared prefix the server does not cache yet is cached: its
    prefill, for this request and for the neighbours sharing its steps."""
    prefix = max(ctx.request.shared_prefix_tokens - ctx.cached_tokens, 0)
    return _fewer_tokens_saving_ms(ctx, prefix)


def _prompt_caching(ctx: LeverContext) -> Estimate | None:
    prefix = ctx.request.shared_prefix_tokens
    if prefix <= 0 or ctx.cached_tokens >= prefix:
        return None
    probed = ctx.probe is not None and ctx.probe.server_caches is False
    return Estimate(
        saving_ms=prompt_caching_saving_ms(ctx),
        how=(
            f"Put the {prefix}-token shared prefix first and keep it byte-identical across "
            "requests; turn on prefix caching (vLLM --enable-prefix-caching, SGLang radix "
            "cache; managed APIs cache a stable prefix)."
        ),
        evidence={
            "shared_prefix_tokens": prefix,
            "prefill_ms_per_token": _r(ctx.model.prefill.ms_per_token),
            "own_prefill_saving_ms": _r(
                _own_prefill_saving_ms(ctx, prefix - min(ctx.cached_tokens, prefix))
            ),
            "server_caches": None if ctx.probe is None else ctx.probe.server_caches,
        },
        prior_confidence=0.9 if probed else 0.7,
    )


def _shorter_prompt(ctx: LeverContext) -> Estimate | None:
    own_tokens = ctx.request.prompt_tokens - max(
        ctx.request.shared_prefix_tokens, ctx.cached_tokens
    )
    if own_tokens <= 0:
        return None
    removed = CUT_SHARE * own_tokens
    request = ctx.request
    # A shorter context is also cheaper to decode: every step re-reads its KV cache. The slope
    # comes from the lowest concurrency (at higher ones TPOT against prompt length also carries
    # the neighbours' prefills, which the engine adds itself).
    lowest = ctx.model.lowest_concurrency
    context_tpot_ms = ctx.model.tpot_ms_at(lowest, request.prompt_tokens) - ctx.model.tpot_ms_at(
        lowest, request.prompt_tokens - removed
    )
    decode_saving_ms = max(request.output_tokens - 1, 0) * max(context_tpot_ms, 0.0)
    prefill_saving_ms = _own_prefill_saving_ms(ctx, removed)
    shorter_tpot_ms = ctx.tpot_alone_ms(request.prompt_tokens) - max(context_tpot_ms, 0.0)
    return Estimate(
        saving_ms=_fewer_tokens_saving_ms(ctx, removed, tpot_alone_ms=shorter_tpot_ms),
        how=(
            f"Send {CUT_SHARE:.0%} fewer prompt tokens ({removed:.0f} of {own_tokens}): retrieve "
            "fewer or shorter passages, drop repeated instructions."
        ),
        evidence={
            "uncached_prompt_tokens": own_tokens,
            "prefill_ms": _r(ctx.breakdown.prefill_ms),
            "tokens_removed": round(removed),
            "prefill_saving_ms": _r(prefill_saving_ms),
            "decode_saving_ms": _r(decode_saving_ms),
        },
        prior_confidence=0.8,
    )


def _output_cap(ctx: LeverContext) -> Estimate | None:
    removed = math.floor(CUT_SHARE * ctx.request.output_tokens)
    if removed < 1:
        return None
    steps = max(ctx.request.output_tokens - 1, 0)
    if steps <= 0:
        return None
    # The measured TPOT carries the neighbours' prefills, which a shorter answer keeps: only the
    # request's own decode steps go (the engine's steps at the lone TPOT, grown by the batch).
    return Estimate(
        saving_ms=engine_saving_ms(ctx, decode_steps=max(steps - removed, 0)),
        how=(
            f"If {CUT_SHARE:.0%} fewer output tokens are enough, cap them: max_tokens, stop "
            f"sequences, a shorter answer format (each token costs {ctx.breakdown.tpot_ms:.1f} ms)."
        ),
        evidence={
            "output_tokens": ctx.request.output_tokens,
            "tpot_ms": _r(ctx.breakdown.tpot_ms),
            "tokens_removed": removed,
        },
        prior_confidence=0.6,
    )


def _min_tpot_ms(
    ctx: LeverContext,
    target: Target,
    weight_dtype: WeightDtype | None = None,
    *,
    concurrency: int | None = None,
) -> float:
    """Roofline TPOT (ms) of `target` for the typical request (at `concurrency` if given)."""
    return min_tpot_ms(
        target,
        concurrency=ctx.request.concurrency if concurrency is None else concurrency,
        prompt_tokens=ctx.request.prompt_tokens,
        output_tokens=ctx.request.output_tokens,
        weight_dtype=weight_dtype,
    )


def _smaller_sibling(model: Model) -> Model | None:
    family = model.name.split("-")[0]
    siblings = [
        m
        for m in MODELS.values()
        if m.name.split("-")[0] == family
        and m.active_params <= SMALLER_MODEL_MAX_RATIO * model.active_params
    ]
    return max(siblings, key=lambda m: m.active_params, default=None)


def _smaller_model(ctx: LeverContext) -> Estimate | None:
    if ctx.target is None:
        return None
    smaller = _smaller_sibling(ctx.target.model)
    if smaller is None:
        return None
    params_ratio = smaller.active_params / ctx.target.model.active_params
    tpot_ratio = _min_tpot_ms(ctx, replace(ctx.target, model=smaller)) / _min_tpot_ms(
        ctx, ctx.target
    )
    saving_ms = engine_saving_ms(
        ctx,
        prefill_ms=ctx.breakdown.prefill_ms * params_ratio,
        tpot_factor=tpot_ratio,
    )
    return Estimate(
        saving_ms=saving_ms,
        how=(
            f"Try {smaller.label} if its quality is enough for the task: prefill scales with "
            "active parameters, decode with the bytes read per token."
        ),
        evidence={
            "declared_model": ctx.target.model.name,
            "smaller_model": smaller.name,
            "active_params_ratio": _r(params_ratio),
            "tpot_ratio": _r(tpot_ratio),
        },
        prior_confidence=0.4,
    )


def _reasoning_budget(ctx: LeverContext) -> Estimate | None:
    if not ctx.breakdown.is_reasoning:
        return None
    return Estimate(
        saving_ms=engine_saving_ms(
            ctx, tpot_factor=1.0 - 0.5 * ctx.breakdown.reasoning_ms / ctx.breakdown.decode_ms
        ),
        how=(
            "Lower the reasoning effort or cap thinking tokens (reasoning_effort, a thinking "
            "budget); priced here for half the thinking."
        ),
        evidence={
            "reasoning_ms": _r(ctx.breakdown.reasoning_ms),
            "ttfa_ms": _r(ctx.breakdown.ttfa_ms),
            "reasoning_share_of_ttfa": _r(ctx.breakdown.reasoning_ms / ctx.breakdown.ttfa_ms),
        },
        prior_confidence=0.5,
    )


def _within_slo(ctx: LeverContext, breakdown: Breakdown) -> bool:
    if ctx.slo.ttft_ms is not None and breakdown.ttft_ms > ctx.slo.ttft_ms:
        return False
    return ctx.slo.tpot_ms is None or breakdown.tpot_ms <= ctx.slo.tpot_ms


def _batching(ctx: LeverContext) -> Estimate | None:
    """The concurrency with the most throughput whose TPOT and E2E stay nearly flat (objective
    latency) and whose predictions meet the SLOs; the lowest within 95% of that throughput."""
    concurrencies = ctx.model.concurrencies
    if len(concurrencies) < 2:
        return None
    base_c = ctx.request.concurrency
    base = ctx.breakdown
    base_tps = ctx.tokens_per_s(base, base_c)
    options = [(base_c, base, base_tps)]
    for c in concurrencies:
        if c <= base_c:
            continue
        predicted = ctx.at_concurrency(c)
        flat = predicted.tpot_ms <= base.tpot_ms * (1 + LATENCY_HEADROOM) and (
            predicted.e2e_ms <= base.e2e_ms * (1 + LATENCY_HEADROOM)
        )
        if ctx.request.objective == "latency" and not flat:
            continue
        if _within_slo(ctx, predicted):
            options.append((c, predicted, ctx.tokens_per_s(predicted, c)))
    best_tps = max(tps for _, _, tps in options)
    c_best, chosen, tps = next(o for o in options if o[2] >= THROUGHPUT_PLATEAU * best_tps)
    change_pct = (tps / base_tps - 1.0) * 100.0
    if c_best == base_c:
        how = (
            f"Keep concurrency at {base_c}: higher measured concurrencies add little throughput "
            "or push TPOT or the SLOs too far."
        )
    else:
        how = (
            f"Run {c_best} requests at once (continuous batching, e.g. vLLM --max-num-seqs "
            f">= {c_best}): TPOT goes from {base.tpot_ms:.1f} to {chosen.tpot_ms:.1f} ms "
            f"and throughput rises {change_pct:.0f}%."
        )
    return Estimate(
        saving_ms=base.e2e_ms - chosen.e2e_ms,
        how=how,
        evidence={
            "tpot_ms_at_target": _r(base.tpot_ms),
            "tpot_ms_at_recommended": _r(chosen.tpot_ms),
            "output_tokens_per_s_at_target": _r(base_tps),
            "output_tokens_per_s_at_recommended": _r(tps),
            "measured_concurrencies": list(concurrencies),
        },
        prior_confidence=0.9,
        throughput_change_pct=change_pct,
        recommended_concurrency=c_best,
    )


def quantized_tpot_ratio(min_tpot_ms: float, quantized_min_tpot_ms: float, tpot_ms: float) -> float:
    """TPOT after quantization over TPOT before, when only the bandwidth-bound share shrinks.

    The roofline minimum (`min_tpot_ms`, at peak bandwidth) is the share of the measured
    `tpot_ms` that reading bytes sets (its MBU); it shrinks to `quantized_min_tpot_ms`. The
    rest (per-step fixed costs, kernels below peak, dequantisation) stays.
    """
    share = min(min_tpot_ms / tpot_ms, 1.0) if tpot_ms > 0 else 1.0
    return 1.0 - share * (1.0 - quantized_min_tpot_ms / min_tpot_ms)


def _quantization(ctx: LeverContext) -> Estimate | None:
    """int4 weights. Decode reads fewer bytes; with a declared deployment the roofline also
    says what prefill does (W4A16 multiplies in bf16, so fp8 weights lose their fp8 cores).

    Only the bandwidth-bound share of TPOT shrinks with the bytes: the roofline's minimum TPOT
    at the lowest concurrency (the measured MBU of it). The rest (per-step fixed costs:
    scheduling, sampling, kernel launches; dequantisation) stays. Public bf16/int4 pairs put
    the whole-TPOT scaling 1.5-2.6x too optimistic on an H100 (docs/advisor.md).
    """
    b = ctx.breakdown
    if b.decode_ms <= 0:
        return None
    prefill_ratio = 1.0
    bandwidth_share: float | None = None
    if ctx.target is None:
        ratio = UNDECLARED_INT4_TPOT_RATIO
        basis = "assumed bf16 weights and memory-bound decode (no --hardware/--declared-model)"
        prior = 0.3
    else:
        if ctx.target.weight_dtype == "int4":
            return None
        lowest = ctx.model.lowest_concurrency
        min_ms = _min_tpot_ms(ctx, ctx.target, concurrency=lowest)
        int4_ms = _min_tpot_ms(ctx, ctx.target, "int4", concurrency=lowest)
        alone_ms = ctx.tpot_alone_ms(ctx.request.prompt_tokens)
        bandwidth_share = min(min_ms / alone_ms, 1.0) if alone_ms > 0 else 1.0
        ratio = quantized_tpot_ratio(min_ms, int4_ms, alone_ms)
        prompt = max(ctx.request.prompt_tokens - ctx.cached_tokens, 1)
        prefill_ratio = roofline.prefill_time_s(
            ctx.target.deployment("int4"), prompt
        ) / roofline.prefill_time_s(ctx.target.deployment(), prompt)
        basis = f"roofline of {ctx.target.model.name} on {ctx.target.hardware.name}"
        prior = 0.7
    how = (
        "Serve int4 weights (AWQ/GPTQ; fp8 is the safer half step): decode reads fewer bytes "
        "per token. Check quality on your own prompts."
    )
    if ctx.target is None:
        # Nothing says the weights are 16-bit: an int4 deployment must not be told to go int4.
        how = (
            f"If the weights are 16-bit: {how[0].lower()}{how[1:]} If they are already int4, "
            "this lever is spent (declare --dtype to leave it out)."
        )
    return Estimate(
        saving_ms=engine_saving_ms(
            ctx,
            prefill_ms=b.prefill_ms * prefill_ratio,
            tpot_factor=ratio,
        ),
        how=how,
        evidence={
            "tpot_ms": _r(b.tpot_ms),
            "predicted_tpot_ms": _r(b.tpot_ms * ratio),
            "predicted_prefill_ms": _r(b.prefill_ms * prefill_ratio),
            "tpot_ratio": _r(ratio),
            "bandwidth_bound_share": None if bandwidth_share is None else _r(bandwidth_share),
            "basis": basis,
        },
        prior_confidence=prior,
    )


def _speculative_decoding(ctx: LeverContext) -> Estimate | None:
    concurrency = ctx.request.concurrency
    limit = None
    if ctx.target is not None:
        limit = roofline.ridge_batch_size(
            ctx.target.deployment(), ctx.request.prompt_tokens + ctx.request.output_tokens // 2
        )
    limit = limit or ctx.model.saturation_concurrency(ctx.request.prompt_tokens) or 32
    if concurrency >= limit or ctx.breakdown.decode_ms <= 0:
        return None
    tokens_per_step = roofline.speculative_tokens_per_step(
        SPECULATIVE_DRAFT_TOKENS, SPECULATIVE_ACCEPTANCE
    )
    full_speedup = tokens_per_step / SPECULATIVE_STEP_COST
    speedup = 1.0 + (full_speedup - 1.0) * (1.0 - (concurrency - 1) / max(limit - 1, 1))
    return Estimate(
        saving_ms=engine_saving_ms(ctx, tpot_factor=1.0 / speedup),
        how=(
            "Add a draft model or EAGLE/n-gram speculation: several tokens per verify step while "
            "decode is memory bound; the gain shrinks as batches fill."
        ),
        evidence={
            "concurrency": concurrency,
            "gain_vanishes_at_concurrency": limit,
            "assumed_draft_tokens": SPECULATIVE_DRAFT_TOKENS,
            "assumed_acceptance_rate": SPECULATIVE_ACCEPTANCE,
            "predicted_speedup": _r(speedup),
        },
        prior_confidence=0.4,
    )


def _scale_out(ctx: LeverContext) -> Estimate | None:
    """A second replica behind a balancer: each serves half the clients, so the typical
    request runs at half the concurrency (predicted from the sweep, which measured it)."""
    b = ctx.breakdown
    if b.queueing_ms <= 0:
        return None
    concurrency = ctx.request.concurrency
    half = ctx.at_concurrency(concurrency / 2.0)
    engine = ctx.engine
    causes = []
    if engine.slots < concurrency:
        causes.append(f"wait for one of about {engine.slots:g} slots")
    if engine.interference >= 0.3:
        causes.append("wait for their neighbours' prefills in the steps they share")
    cause = " and ".join(causes) or "wait before their first token"
    return Estimate(
        saving_ms=b.e2e_ms - half.e2e_ms,
        how=(
            "Add a replica so each serves half the requests (or admit fewer at once): "
            f"requests now {cause}. At concurrency {concurrency / 2:g} the sweep predicts "
            f"{half.e2e_ms:.0f} ms instead of {b.e2e_ms:.0f} ms."
        ),
        evidence={
            "queue_ms": _r(b.queueing_ms),
            "engine_slots": None if math.isinf(engine.slots) else engine.slots,
            "engine_interference": engine.interference,
            "concurrency_per_replica": concurrency / 2.0,
            "queue_ms_per_replica": _r(half.queueing_ms),
            "tpot_ms_per_replica": _r(half.tpot_ms),
            "queue_ms_by_concurrency": {
                str(c): _r(ctx.model.queue_ms_at(c, ctx.request.prompt_tokens))
                for c in ctx.model.concurrencies
            },
        },
        prior_confidence=0.8,
    )


def _reduce_overhead(ctx: LeverContext) -> Estimate | None:
    overhead_ms = ctx.breakdown.overhead_ms
    if overhead_ms < OVERHEAD_FLOOR_MS:
        return None
    return Estimate(
        saving_ms=engine_saving_ms(ctx, overhead_ms=0.5 * overhead_ms),
        how=(
            "Call from the endpoint's region and reuse connections (keep-alive, one client per "
            f"process): an empty prompt already waits {overhead_ms:.0f} ms. Priced for half."
        ),
        evidence={
            "overhead_ms": _r(overhead_ms),
            "connect_ms_p50": None if ctx.connect_ms_p50 is None else _r(ctx.connect_ms_p50),
            "new_connection_share": _r(ctx.new_connection_share),
        },
        prior_confidence=0.3,
    )


ESTIMATORS: dict[str, Callable[[LeverContext], Estimate | None]] = {
    "prompt_caching": _prompt_caching,
    "shorter_prompt": _shorter_prompt,
    "output_cap": _output_cap,
    "smaller_model": _smaller_model,
    "reasoning_budget": _reasoning_budget,
    "batching": _batching,
    "quantization": _quantization,
    "speculative_decoding": _speculative_decoding,
    "scale_out": _scale_out,
    "reduce_overhead": _reduce_overhead,
}


@dataclass(frozen=True)
class Recommendation:
    lever: str
    estimate: Estimate
    e2e_ms: float
    confidence: float

    @property
    def saving_share(self) -> float:
        return self.estimate.saving_ms / self.e2e_ms if self.e2e_ms > 0 else 0.0

    @property
    def throughput_change_pct(self) -> float:
        """Given, or at fixed concurrency in a closed loop: throughput scales as 1 / E2E."""
        if self.estimate.throughput_change_pct is not None:
            return self.estimate.throughput_change_pct
        remaining_ms = self.e2e_ms - self.estimate.saving_ms
        return (self.e2e_ms / remaining_ms - 1.0) * 100.0 if remaining_ms > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "lever": self.lever,
            "expected_saving_ms": _r(self.estimate.saving_ms),
            "saving_share": round(self.saving_share, 4),
            "throughput_change_pct": round(self.throughput_change_pct, 2),
            "confidence": round(self.confidence, 3),
            "evidence": self.estimate.evidence,
            "how": self.estimate.how,
        }
        if self.estimate.recommended_concurrency is not None:
            data["recommended_concurrency"] = self.estimate.recommended_concurrency
        return data

    def question(self) -> dict[str, Any]:
        """The same lever as a question for a managed API's provider."""
        return {
            "lever": self.lever,
            "question": LEVERS[self.lever].provider_question,
            "expected_saving_ms": _r(self.estimate.saving_ms),
            "evidence": self.estimate.evidence,
        }


@dataclass(frozen=True)
class Advice:
    recommendations: list[Recommendation]
    provider_questions: list[Recommendation]


def _worth_mentioning(code: str, estimate: Estimate, e2e_ms: float) -> bool:
    if code == "batching":
        return True
    return estimate.saving_ms >= max(MIN_SAVING_SHARE * e2e_ms, 1.0)


def recommend(ctx: LeverContext, resampled: Sequence[LeverContext]) -> Advice:
    """Estimate every lever, score its stability over the bootstrap contexts, sort and split.

    confidence = prior (how sure the lever's assumptions are) x the share of resamples whose
    estimate agrees within 25% (or names the same concurrency, for batching).
    Sorted by saving (objective latency) or by throughput gained (objective throughput).
    """
    e2e_ms = ctx.breakdown.e2e_ms
    recommendations: list[Recommendation] = []
    questions: list[Recommendation] = []
    for code, estimator in ESTIMATORS.items():
        if code == "prompt_caching" and ctx.probe is not None and ctx.probe.server_caches:
            continue
        estimate = estimator(ctx)
        if estimate is None or not _worth_mentioning(code, estimate, e2e_ms):
            continue
        agreeing = sum(estimate.agrees_with(estimator(other)) for other in resampled)
        stability = agreeing / len(resampled) if resampled else 1.0
        item = Recommendation(code, estimate, e2e_ms, estimate.prior_confidence * stability)
        if ctx.request.serving == "managed_api" and LEVERS[code].who != "anyone":
            questions.append(item)
        else:
            recommendations.append(item)
    if ctx.request.objective == "throughput":
        recommendations.sort(key=lambda r: r.throughput_change_pct, reverse=True)
    else:
        recommendations.sort(key=lambda r: r.estimate.saving_ms, reverse=True)
    questions.sort(key=lambda r: r.estimate.saving_ms, reverse=True)
    return Advice(recommendations=recommendations, provider_questions=questions)
