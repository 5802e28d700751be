"""Fit the glossary's latency model to a run's samples.

TTFT = overhead + prefill(uncached prompt tokens) at the lowest concurrency (robust fit),
queue_ms and tpot_ms per (concurrency, prompt length), throughput per concurrency and its knee,
and the shared engine (`engine.py`) that shapes the queue between measured concurrencies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from scipy import stats

from advisor.core.engine import EngineFit, EnginePoint, fit_engine
from advisor.core.interpolate import interp_linear
from advisor.core.samples import Sample

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]

HUBER_K = 1.345
"""Huber threshold in robust standard deviations (95% efficiency on Gaussian noise)."""
BISQUARE_K = 4.685
"""Tukey bisquare cut-off (robust SDs) of the final refinement: farther points get weight 0."""
CURVATURE_P_VALUE = 0.01
"""A curvature term is kept only when the F-test rejects the straight line at this level..."""
CURVATURE_MIN_SHARE = 0.05
"""...and it adds at least this share to the prefill time of the longest measured prompt."""
KNEE_SHARE = 0.9
"""The saturation knee is the lowest concurrency reaching this share of the best throughput."""
MISFIT_QUEUE_MS = 1.0
"""A measured queue above this where the fitted engine predicts none: the engine misfits."""
TOKENS_PER_UNIT = 1000.0
"""Prompt tokens are scaled to thousands inside the fit for a well-conditioned design matrix."""


class FitError(ValueError):
    """The samples cannot support a fit; the message says what is missing."""


@dataclass(frozen=True)
class SampleTable:
    """Usable samples as columns (NaN where a value is unknown), grouped by sweep point.

    A sweep point is (concurrency, target prompt tokens). `rows_by_group[g]` holds the row
    indices of point `groups[g]`.
    """

    concurrency: IndexArray
    prompt_tokens: FloatArray
    uncached_prompt_tokens: FloatArray
    ttft_ms: FloatArray
    e2e_ms: FloatArray
    tpot_ms: FloatArray
    output_tokens: FloatArray
    reasoning_ms: FloatArray
    connect_ms: FloatArray
    groups: tuple[tuple[int, int], ...]
    rows_by_group: tuple[IndexArray, ...]
    prompt_tokens_estimated: int
    output_tokens_estimated: int


def _tpot_ms(sample: Sample, output_tokens: float) -> float:
    if sample.tpot_ms is not None:
        return sample.tpot_ms
    if sample.ttft_ms is None or sample.e2e_ms is None or not output_tokens >= 2:
        return math.nan
    return (sample.e2e_ms - sample.ttft_ms) / (output_tokens - 1)


def build_table(samples: Sequence[Sample]) -> SampleTable:
    """Columns of the usable samples. Missing usage falls back to the targets and is counted."""
    usable = [s for s in samples if s.usable]
    if not usable:
        raise FitError("no successful measured request: nothing to fit")
    prompt = [float(s.prompt_tokens or s.target_prompt_tokens) for s in usable]
    cached = [float(s.cached_prompt_tokens or 0) for s in usable]
    output = [
        float(s.output_tokens) if s.output_tokens is not None else float(s.target_output_tokens)
        for s in usable
    ]
    keys = [(s.concurrency, s.target_prompt_tokens) for s in usable]
    groups = tuple(sorted(set(keys)))
    position = {key: g for g, key in enumerate(groups)}
    group_of = np.array([position[k] for k in keys], dtype=np.intp)
    nan = math.nan
    return SampleTable(
        concurrency=np.array([s.concurrency for s in usable], dtype=np.intp),
        prompt_tokens=np.array(prompt),
        uncached_prompt_tokens=np.maximum(np.array(prompt) - np.array(cached), 0.0),
        ttft_ms=np.array([s.ttft_ms for s in usable], dtype=np.float64),
        e2e_ms=np.array([s.e2e_ms for s in usable], dtype=np.float64),
        tpot_ms=np.array([_tpot_ms(s, n) for s, n in zip(usable, output, strict=True)]),
        output_tokens=np.array(output),
        reasoning_ms=np.array(
            [
                s.ttfa_ms - s.ttft_ms if s.ttfa_ms is not None and s.ttft_ms is not None else nan
                for s in usable
            ]
        ),
        connect_ms=np.array([nan if s.connect_ms is None else s.connect_ms for s in usable]),
        groups=groups,
        rows_by_group=tuple(np.flatnonzero(group_of == g) for g in range(len(groups))),
        prompt_tokens_estimated=sum(1 for s in usable if s.prompt_tokens is None),
        output_tokens_estimated=sum(
            1 for s in usable if s.output_tokens is None or s.tokens_estimated
        ),
    )


def resample_groups(
    rows_by_group: Sequence[IndexArray], rng: np.random.Generator
) -> tuple[IndexArray, ...]:
    """A stratified bootstrap resample: each sweep point keeps its own sample count."""
    return tuple(rng.choice(rows, size=rows.size, replace=True) for rows in rows_by_group)


def _robust_scale(residuals: FloatArray) -> float:
    """Median absolute deviation scaled to a Gaussian standard deviation (same unit)."""
    return float(1.4826 * np.median(np.abs(residuals - np.median(residuals))))


def _irls(
    design: FloatArray,
    y: FloatArray,
    coef: FloatArray,
    weigh: Callable[[FloatArray], FloatArray],
    *,
    iterations: int,
    fixed_scale: float | None = None,
) -> tuple[FloatArray, FloatArray, float]:
    """Iteratively reweighted least squares; `weigh` maps standardised residuals to weights."""
    weights = np.ones_like(y)
    scale = fixed_scale if fixed_scale is not None else 0.0
    for _ in range(iterations):
        residuals = y - design @ coef
        if fixed_scale is None:
            scale = _robust_scale(residuals)
        if scale <= 1e-9 * (1.0 + float(np.median(np.abs(y)))):
            break
        weights = weigh(np.abs(residuals) / scale)
        root = np.sqrt(weights)
        updated = np.asarray(
            np.linalg.lstsq(design * root[:, None], y * root, rcond=None)[0], dtype=np.float64
        )
        converged = np.allclose(updated, coef, rtol=1e-7, atol=1e-9)
        coef = updated
        if converged:
            break
    return coef, weights, scale


def _huber_weights(u: FloatArray) -> FloatArray:
    return np.minimum(1.0, HUBER_K / np.maximum(u, 1e-12))


def _bisquare_weights(u: FloatArray) -> FloatArray:
    return np.where(u < BISQUARE_K, (1.0 - (u / BISQUARE_K) ** 2) ** 2, 0.0)


def robust_fit(design: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Robust estimate of `y ~ design @ coef`: Huber IRLS, then a Tukey bisquare refinement.

    Returns (coef, weights). Huber gives a unique start; the bisquare step, at the Huber
    scale, gives zero weight to gross outliers (a TTFT spike several times the typical one),
    so they do not bias the intercept. Weights are in [0, 1].
    """
    start = np.asarray(np.linalg.lstsq(design, y, rcond=None)[0], dtype=np.float64)
    coef, _, scale = _irls(design, y, start, _huber_weights, iterations=50)
    if scale <= 0.0:
        return coef, np.ones_like(y)
    refined, weights, _ = _irls(
        design, y, coef, _bisquare_weights, iterations=20, fixed_scale=scale
    )
    if float(np.sum(weights > 0)) < design.shape[1] + 1:
        return coef, np.ones_like(y)
    return refined, weights


def _design(tokens: FloatArray, degree: int) -> FloatArray:
    x = tokens / TOKENS_PER_UNIT
    return np.column_stack([x**d for d in range(degree + 1)])


@dataclass(frozen=True)
class PrefillFit:
    """TTFT at the lowest concurrency: overhead_ms + max(floor_ms, a·P + b·P²).

    P is uncached prompt tokens, a = `ms_per_token`, b = `ms_per_token_sq`. The floor (a short
    prompt's forward pass still reads every weight: memory bound) and the curvature (attention)
    are zero unless the data demand them. `floor_lengths` is how many of the shortest swept
    lengths sit on the floor.
    """

    overhead_ms: float
    ms_per_token: float
    ms_per_token_sq: float
    curvature_p_value: float | None
    r2: float
    residual_sd_ms: float
    n: int
    outliers: int
    floor_ms: float = 0.0
    floor_lengths: int = 0

    @property
    def curvature_used(self) -> bool:
        return self.ms_per_token_sq != 0.0

    def prefill_ms(self, uncached_prompt_tokens: float) -> float:
        """Fitted prefill time (ms) of that many uncached tokens; never negative."""
        p = uncached_prompt_tokens
        line_ms = self.ms_per_token * p + self.ms_per_token_sq * p * p
        floor_ms = self.floor_ms if p > 0 else 0.0
        return max(line_ms, floor_ms, 0.0)

    def prefill_ms_array(self, uncached_prompt_tokens: FloatArray) -> FloatArray:
        """`prefill_ms` of each element (ms)."""
        p = uncached_prompt_tokens
        line_ms = self.ms_per_token * p + self.ms_per_token_sq * p * p
        return np.maximum(np.maximum(line_ms, np.where(p > 0, self.floor_ms, 0.0)), 0.0)


def _curvature_p_value(design_quad: FloatArray, y: FloatArray, weights: FloatArray) -> float:
    """Weighted partial F-test p-value of the quadratic column (robust weights of the quad fit).

    Points with weight 0 (rejected outliers) do not count towards the degrees of freedom.
    """
    n = int(np.sum(weights > 0))
    if n <= 3:
        return 1.0
    root = np.sqrt(weights)
    rss = []
    for columns in (2, 3):
        a = design_quad[:, :columns] * root[:, None]
        b = y * root
        coef = np.linalg.lstsq(a, b, rcond=None)[0]
        rss.append(float(np.sum((b - a @ coef) ** 2)))
    rss_line, rss_quad = rss
    if rss_quad <= 1e-12 * (1.0 + rss_line):
        return 0.0 if rss_line > 1e-9 else 1.0
    f = (rss_line - rss_quad) / (rss_quad / (n - 3))
    return float(stats.f.sf(f, 1, n - 3))


FLOOR_MIN_SHARE = 0.02
"""A floor or lack of fit must exceed this share of the TTFT (beyond 3 noise SDs) to count."""


@dataclass(frozen=True)
class _Groups:
    """Per prompt-length group medians of one concurrency's TTFTs (ms) and the pure noise."""

    labels: npt.NDArray[np.int64]
    x: FloatArray
    y: FloatArray
    counts: FloatArray
    noise_sd_ms: float

    @classmethod
    def of(cls, tokens: FloatArray, ttft_ms: FloatArray, groups: npt.NDArray[np.int64]) -> _Groups:
        labels = np.unique(groups)
        x = np.array([np.median(tokens[groups == g]) for g in labels])
        y = np.array([np.median(ttft_ms[groups == g]) for g in labels])
        counts = np.array([np.sum(groups == g) for g in labels], dtype=np.float64)
        within = ttft_ms - y[np.searchsorted(labels, groups)]
        return cls(labels, x, y, counts, _robust_scale(within))

    def tolerance_ms(self) -> FloatArray:
        """How far a model may miss a group median before it is a misfit (ms)."""
        return 3.0 * self.noise_sd_ms / np.sqrt(self.counts) + FLOOR_MIN_SHARE * np.abs(self.y)

    def misfit(self, predicted_ms: FloatArray) -> float:
        """Count-weighted squared miss of the group medians (ms²)."""
        return float(np.sum(self.counts * (self.y - predicted_ms) ** 2))


def _line(tokens: FloatArray, ttft_ms: FloatArray) -> FloatArray:
    return robust_fit(_design(tokens, 1), ttft_ms)[0]


def _predict(coef: FloatArray, tokens: FloatArray) -> FloatArray:
    return _design(tokens, coef.size - 1) @ coef


def _floor_lengths(tokens: FloatArray, ttft_ms: FloatArray, groups: npt.NDArray[np.int64]) -> int:
    """How many of the shortest prompt-length groups sit on a prefill floor (0: none).

    Candidates put the k shortest groups on a flat level (their median TTFT) and fit a line
    through the rest. One is kept when the straight line through everything misses a group
    median by more than noise and 2%, the floor binds (its level is above the line), and it
    fits the medians at least four times better than the straight line and, with four or more
    lengths, twice better than a quadratic (with three, the two cannot be told apart, and a
    short prompt on a GPU is memory bound, so the floor is preferred).
    """
    g = _Groups.of(tokens, ttft_ms, groups)
    m = g.labels.size
    if m < 3:
        return 0
    line_all = _predict(_line(tokens, ttft_ms), g.x)
    if np.all(np.abs(g.y - line_all) <= g.tolerance_ms()):
        return 0
    quad_misfit = math.inf
    if m >= 4:
        quad_misfit = g.misfit(_predict(robust_fit(_design(tokens, 2), ttft_ms)[0], g.x))
    best_k, best_misfit = 0, 0.25 * g.misfit(line_all)
    for k in range(1, m - 1):
        on_line = groups > g.labels[k - 1]
        coef = _line(tokens[on_line], ttft_ms[on_line])
        level_ms = float(g.y[k - 1])
        binding = level_ms - float(_predict(coef, g.x[k - 1 : k])[0]) > g.tolerance_ms()[k - 1]
        misfit = g.misfit(np.maximum(level_ms, _predict(coef, g.x)))
        if binding and misfit < best_misfit and misfit < 0.5 * quad_misfit:
            best_k, best_misfit = k, misfit
    return best_k


def fit_prefill(
    uncached_prompt_tokens: FloatArray,
    ttft_ms: FloatArray,
    *,
    groups: npt.NDArray[np.int64] | None = None,
    curvature: bool | None = None,
    floor_lengths: int | None = None,
) -> PrefillFit:
    """Robust fit of TTFT (ms) against uncached prompt tokens at one concurrency.

    `groups` labels each request's swept prompt length (default: its rounded token count).
    `floor_lengths=None` decides whether the shortest lengths sit on a floor (`_floor_lengths`);
    the line is then fitted on the other lengths, and the floor is their median TTFT less the
    overhead. `curvature=None` decides by a partial F-test: the quadratic term is kept when
    p < 0.01, it is convex (attention makes prefill grow faster than linearly, never slower)
    and it adds at least 5% to the longest prompt's prefill. Fixed values force the choices
    (the bootstrap reuses the decisions taken on the full data).
    """
    if groups is None:
        groups = np.round(uncached_prompt_tokens).astype(np.int64)
    lengths = np.unique(groups).size
    if ttft_ms.size < 3 or lengths < 2:
        raise FitError("the TTFT fit needs at least two prompt lengths and three requests")
    if floor_lengths is None:
        floor_lengths = _floor_lengths(uncached_prompt_tokens, ttft_ms, groups)
    labels = np.unique(groups)
    floor_level_ms: float | None = None
    x, y = uncached_prompt_tokens, ttft_ms
    if floor_lengths:
        on_floor = groups <= labels[floor_lengths - 1]
        floor_level_ms = float(np.median(ttft_ms[on_floor]))
        x, y = uncached_prompt_tokens[~on_floor], ttft_ms[~on_floor]
        lengths -= floor_lengths
    p_value: float | None = None
    quad: tuple[FloatArray, FloatArray] | None = None
    if curvature is not False and lengths >= 3 and y.size >= 6:
        design_quad = _design(x, 2)
        quad = robust_fit(design_quad, y)
        if curvature is None:
            p_value = _curvature_p_value(design_quad, y, quad[1])
            x_max = float(np.max(x)) / TOKENS_PER_UNIT
            linear_ms, curve_ms = quad[0][1] * x_max, quad[0][2] * x_max**2
            material = curve_ms > CURVATURE_MIN_SHARE * (abs(linear_ms) + curve_ms)
            quad = quad if p_value < CURVATURE_P_VALUE and curve_ms > 0 and material else None
    degree = 1 if quad is None else 2
    coef, weights = robust_fit(_design(x, degree), y) if quad is None else quad
    overhead_ms = float(coef[0])
    fit = PrefillFit(
        overhead_ms=overhead_ms,
        ms_per_token=float(coef[1]) / TOKENS_PER_UNIT,
        ms_per_token_sq=float(coef[2]) / TOKENS_PER_UNIT**2 if degree == 2 else 0.0,
        curvature_p_value=p_value,
        r2=math.nan,
        residual_sd_ms=math.nan,
        n=int(ttft_ms.size),
        outliers=int(np.sum(weights <= 0)),
        floor_ms=0.0 if floor_level_ms is None else max(floor_level_ms - overhead_ms, 0.0),
        floor_lengths=floor_lengths,
    )
    residuals = ttft_ms - overhead_ms - fit.prefill_ms_array(uncached_prompt_tokens)
    total = float(np.sum((ttft_ms - np.median(ttft_ms)) ** 2))
    inlier_residuals = residuals[
        np.abs(residuals) <= BISQUARE_K * max(_robust_scale(residuals), 1e-9)
    ]
    r2 = 1.0 - float(np.sum(inlier_residuals**2)) / total if total > 0 else 1.0
    return replace(fit, r2=r2, residual_sd_ms=_robust_scale(residuals))


@dataclass(frozen=True)
class PointStats:
    """Trimmed means at one sweep point (durations ms, tokens). NaN where unmeasured."""

    concurrency: int
    target_prompt_tokens: int
    n: int
    prompt_tokens: float
    uncached_prompt_tokens: float
    ttft_ms: float
    queue_ms: float
    tpot_ms: float
    output_tokens: float
    e2e_ms: float
    reasoning_ms: float
    output_tokens_per_s: float


TRIM_SHARE = 0.1
"""Per-point averages drop this share at each end: robust to stray requests, yet (unlike the
median) right for a bimodal queue wait, where half the requests get a slot at once."""


def _trimmed_mean(values: FloatArray) -> float:
    """10%-trimmed mean of the finite values (same unit); NaN when there are none."""
    finite = np.sort(values[np.isfinite(values)])
    if not finite.size:
        return math.nan
    cut = int(TRIM_SHARE * finite.size)
    return float(finite[cut : finite.size - cut].mean())


@dataclass(frozen=True)
class LatencyModel:
    """The fitted model: a prefill fit plus per-point medians, interpolated on demand.

    Every `*_at` method takes a concurrency and a prompt length in tokens, interpolates in
    prompt length at each measured concurrency, then across concurrencies.
    """

    prefill: PrefillFit
    lowest_concurrency: int
    points: tuple[PointStats, ...]
    engine: EngineFit | None = None
    """How the requests share the server (slots, neighbours' prefills); see `engine.py`."""

    @property
    def concurrencies(self) -> tuple[int, ...]:
        return tuple(sorted({p.concurrency for p in self.points}))

    def _surface(self, value: Callable[[PointStats], float], concurrency: float, p: float) -> float:
        by_concurrency = []
        for c in self.concurrencies:
            at_c = [q for q in self.points if q.concurrency == c]
            by_concurrency.append(
                interp_linear([q.prompt_tokens for q in at_c], [value(q) for q in at_c], p)
            )
        return interp_linear([float(c) for c in self.concurrencies], by_concurrency, concurrency)

    def queue_ms_at(
        self,
        concurrency: float,
        prompt_tokens: float,
        *,
        prefill_ms: float | None = None,
        decode_steps: float | None = None,
    ) -> float:
        """Queueing (ms): TTFT above the lowest-concurrency fit; 0 at or below that concurrency.

        At a measured concurrency it is what the sweep measured. Between two, it follows the
        fitted engine's wait (`engine.py`: slots fill, neighbours' prefills), scaled by the share
        of that wait the sweep measured before the first token at the measured concurrencies.
        With `prefill_ms` and `decode_steps` (the caller's own request: fewer uncached tokens,
        a longer answer), the wait moves as the engine predicts for that change: a longer
        answer keeps slots busy longer and meets more neighbours' prefills.
        """
        if concurrency <= self.lowest_concurrency:
            return 0.0
        measured = [float(c) for c in self.concurrencies]
        queues = [self._surface(lambda q: q.queue_ms, c, prompt_tokens) for c in measured]
        engine = self.engine
        if engine is None:
            return max(interp_linear(measured, queues, concurrency), 0.0)
        sweep_prefill_ms = self.prefill.prefill_ms(prompt_tokens)
        tpot_alone_ms = self.tpot_ms_at(self.lowest_concurrency, prompt_tokens)

        def wait_ms(c: float, prefill: float, steps: float) -> float:
            assert engine is not None
            return engine.wait_ms(
                concurrency=c, prefill_ms=prefill, decode_steps=steps, tpot_alone_ms=tpot_alone_ms
            )

        # The share of the engine's wait that the sweep measured before the first token, at
        # each measured concurrency that waited; carried flat beyond the outermost ones. A
        # measured queue the engine cannot produce at all (it misfits) keeps the straight line.
        shares_at: list[float] = []
        shares: list[float] = []
        misfit = False
        for c, queue in zip(measured, queues, strict=True):
            if c <= self.lowest_concurrency or not math.isfinite(queue):
                continue
            steps = max(self._surface(lambda q: q.output_tokens, c, prompt_tokens) - 1.0, 0.0)
            modelled = wait_ms(c, sweep_prefill_ms, steps)
            if modelled > 1e-6:
                shares_at.append(c)
                shares.append(max(queue, 0.0) / modelled)
            elif queue > MISFIT_QUEUE_MS:
                misfit = True
        sweep_steps = max(
            self._surface(lambda q: q.output_tokens, concurrency, prompt_tokens) - 1.0, 0.0
        )
        own_prefill_ms = sweep_prefill_ms if prefill_ms is None else prefill_ms
        own_steps = sweep_steps if decode_steps is None else decode_steps
        share = interp_linear(shares_at, shares, concurrency) if shares else 1.0
        if concurrency in measured or misfit or not shares:
            measured_ms = max(interp_linear(measured, queues, concurrency), 0.0)
            shift_ms = wait_ms(concurrency, own_prefill_ms, own_steps) - wait_ms(
                concurrency, sweep_prefill_ms, sweep_steps
            )
            return max(measured_ms + share * shift_ms, 0.0)
        return share * wait_ms(concurrency, own_prefill_ms, own_steps)

    def tpot_ms_at(self, concurrency: float, prompt_tokens: float) -> float:
        """Time per output token (ms/token) at that concurrency and prompt length."""
        return max(self._surface(lambda q: q.tpot_ms, concurrency, prompt_tokens), 0.0)

    def reasoning_ms_at(self, concurrency: float, prompt_tokens: float) -> float:
        """TTFA - TTFT (ms): time spent thinking before the first visible answer token."""
        value = self._surface(lambda q: q.reasoning_ms, concurrency, prompt_tokens)
        return max(value, 0.0) if math.isfinite(value) else 0.0

    def output_tokens_per_s_at(self, concurrency: float, prompt_tokens: float) -> float:
        """Aggregate output tokens/s of a closed loop at that concurrency (Little's law)."""
        return self._surface(lambda q: q.output_tokens_per_s, concurrency, prompt_tokens)

    def saturation_concurrency(self, prompt_tokens: float) -> int | None:
        """Lowest measured concurrency with >= 90% of the best throughput, if a higher one
        was measured too (else no knee was seen: None)."""
        curve = [(c, self.output_tokens_per_s_at(c, prompt_tokens)) for c in self.concurrencies]
        curve = [(c, t) for c, t in curve if math.isfinite(t)]
        if len(curve) < 2:
            return None
        best = max(t for _, t in curve)
        knee = next(c for c, t in curve if t >= KNEE_SHARE * best)
        return knee if knee < curve[-1][0] else None


def fit_latency_model(
    table: SampleTable,
    rows_by_group: Sequence[IndexArray] | None = None,
    *,
    curvature: bool | None = None,
    floor_lengths: int | None = None,
    engine: EngineFit | None = None,
) -> LatencyModel:
    """Fit the model on the table's rows (all of them, or a bootstrap resample of them)."""
    rows_by_group = table.rows_by_group if rows_by_group is None else rows_by_group
    lowest = min(c for c, _ in table.groups)
    low = [
        (target, rows)
        for (c, target), rows in zip(table.groups, rows_by_group, strict=True)
        if c == lowest
    ]
    low_rows = np.concatenate([rows for _, rows in low])
    length_groups = np.concatenate(
        [np.full(rows.size, target, dtype=np.int64) for target, rows in low]
    )
    prefill = fit_prefill(
        table.uncached_prompt_tokens[low_rows],
        table.ttft_ms[low_rows],
        groups=length_groups,
        curvature=curvature,
        floor_lengths=floor_lengths,
    )
    points = []
    for (c, target), rows in zip(table.groups, rows_by_group, strict=True):
        fitted_ttft_ms = prefill.overhead_ms + prefill.prefill_ms_array(
            table.uncached_prompt_tokens[rows]
        )
        output = _trimmed_mean(table.output_tokens[rows])
        e2e_ms = _trimmed_mean(table.e2e_ms[rows])
        points.append(
            PointStats(
                concurrency=c,
                target_prompt_tokens=target,
                n=int(rows.size),
                prompt_tokens=float(np.median(table.prompt_tokens[rows])),
                uncached_prompt_tokens=float(np.median(table.uncached_prompt_tokens[rows])),
                ttft_ms=_trimmed_mean(table.ttft_ms[rows]),
                queue_ms=(
                    0.0 if c == lowest else _trimmed_mean(table.ttft_ms[rows] - fitted_ttft_ms)
                ),
                tpot_ms=_trimmed_mean(table.tpot_ms[rows]),
                output_tokens=output,
                e2e_ms=e2e_ms,
                reasoning_ms=_trimmed_mean(table.reasoning_ms[rows]),
                output_tokens_per_s=c * output / e2e_ms * 1000.0 if e2e_ms > 0 else math.nan,
            )
        )
    model = LatencyModel(prefill=prefill, lowest_concurrency=lowest, points=tuple(points))
    return replace(model, engine=_fit_engine(model, engine))


def engine_point(model: LatencyModel, point: PointStats) -> EnginePoint:
    """A sweep point as the engine model sees it: its prefill from the fit, its lone TPOT."""
    return EnginePoint(
        concurrency=float(point.concurrency),
        prefill_ms=model.prefill.prefill_ms(point.uncached_prompt_tokens),
        decode_steps=max(point.output_tokens - 1.0, 0.0),
        tpot_alone_ms=model.tpot_ms_at(model.lowest_concurrency, point.prompt_tokens),
        e2e_ms=point.e2e_ms,
    )


def _fit_engine(model: LatencyModel, keep: EngineFit | None) -> EngineFit:
    """The engine's parameters: fitted, or `keep`'s (bootstrap resamples keep the full fit's)."""
    overhead_ms = max(model.prefill.overhead_ms, 0.0)
    if keep is not None:
        return replace(keep, overhead_ms=overhead_ms)
    usable = [
        engine_point(model, p)
        for p in model.points
        if math.isfinite(p.e2e_ms) and math.isfinite(p.output_tokens)
    ]
    return fit_engine(overhead_ms, usable, _tpot_growth(model))


def _tpot_growth(model: LatencyModel) -> list[tuple[float, float]]:
    """(concurrency, TPOT over TPOT at the lowest concurrency), at the shortest swept prompt."""
    shortest = min(p.prompt_tokens for p in model.points)
    alone_ms = model.tpot_ms_at(model.lowest_concurrency, shortest)
    if not alone_ms > 0:
        return []
    return [
        (float(c), model.tpot_ms_at(c, shortest) / alone_ms)
        for c in model.concurrencies
        if c > model.lowest_concurrency
    ]


@dataclass(frozen=True)
class ConnectionStats:
    """Connection set-up, reported beside the overhead (it is not part of TTFT)."""

    connect_ms_p50: float | None
    new_connection_share: float


def connection_stats(table: SampleTable) -> ConnectionStats:
    """p50 of `connect_ms` over requests that opened a connection, and their share."""
    opened = table.connect_ms[np.isfinite(table.connect_ms)]
    return ConnectionStats(
        connect_ms_p50=float(np.median(opened)) if opened.size else None,
        new_connection_share=float(opened.size / table.connect_ms.size),
    )
