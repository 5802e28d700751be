"""Piecewise-linear interpolation between measured sweep points, extended linearly past the ends."""

from __future__ import annotations

import math
from collections.abc import Sequence


def interp_linear(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Value at `x` of the polyline through (xs, ys), NaN points dropped; NaN when none is left.

    Inside the measured range it interpolates; outside it extends the end segment (the caller
    refuses a verdict beyond 1.5x the measured range). Equal xs are averaged. One point gives
    a constant.
    """
    merged: dict[float, list[float]] = {}
    for xi, yi in zip(xs, ys, strict=True):
        if math.isfinite(xi) and math.isfinite(yi):
            merged.setdefault(float(xi), []).append(float(yi))
    if not merged:
        return math.nan
    points = sorted((xi, sum(v) / len(v)) for xi, v in merged.items())
    if len(points) == 1:
        return points[0][1]
    if x <= points[0][0]:
        (x0, y0), (x1, y1) = points[0], points[1]
    elif x >= points[-1][0]:
        (x0, y0), (x1, y1) = points[-2], points[-1]
    else:
        i = next(k for k in range(1, len(points)) if points[k][0] >= x)
        (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
