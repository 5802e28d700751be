"""Summary statistics of one metric over one sweep point: percentiles, mean, bootstrap CI."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_MAX_N = 1000  # larger samples (ITL) use the order-statistic interval
DECIMALS = 3


def summarize(values: Sequence[float], *, seed: int = 0) -> dict[str, Any] | None:
    """`{n, p50, p90, p95, p99, mean, stdev, p50_ci95: [lo, hi]}`, or None without values.

    Percentiles interpolate linearly; `stdev` is the sample standard deviation (null for n=1);
    `p50_ci95` is a 95% interval of the median: a seeded percentile bootstrap (reproducible),
    or for large samples the order-statistic interval.
    """
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    p50, p90, p95, p99 = np.percentile(data, [50, 90, 95, 99])
    return {
        "n": int(data.size),
        "p50": _round(p50),
        "p90": _round(p90),
        "p95": _round(p95),
        "p99": _round(p99),
        "mean": _round(data.mean()),
        "stdev": _round(data.std(ddof=1)) if data.size > 1 else None,
        "p50_ci95": median_ci95(data, seed=seed),
    }


def median_ci95(data: np.ndarray[Any, Any], *, seed: int = 0) -> list[float]:
    """Percentile bootstrap of the median; above `BOOTSTRAP_MAX_N` values, the distribution-free
    order-statistic interval (ranks n/2 -+ 1.96 sqrt(n)/2), which the bootstrap converges to."""
    if data.size == 1:
        return [_round(data[0]), _round(data[0])]
    if data.size > BOOTSTRAP_MAX_N:
        ordered = np.sort(data)
        half_width = 1.96 * np.sqrt(data.size) / 2
        low_rank = max(0, int(np.floor(data.size / 2 - half_width)))
        high_rank = min(data.size - 1, int(np.ceil(data.size / 2 + half_width)))
        return [_round(ordered[low_rank]), _round(ordered[high_rank])]
    rng = np.random.default_rng(seed)
    draws = rng.choice(data, size=(BOOTSTRAP_RESAMPLES, data.size), replace=True)
    low, high = np.percentile(np.median(draws, axis=1), [2.5, 97.5])
    return [_round(low), _round(high)]


def _round(value: float | np.floating[Any]) -> float:
    return round(float(value), DECIMALS)
