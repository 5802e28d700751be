"""The advisor's lever promises against the simulator's engine in virtual time (seconds, not hours).

The same seeded random profiles and workloads as `perf/advisor_accuracy.py --server simulator`,
but every sweep point and every lever check is a closed loop run on the simulator's scheduler
in virtual time (`simulator.closedloop`), with a random front jitter standing in for the wire.
It isolates the advisor's model from measurement noise: a miss here is the model's own.
The real-time check (`perf/advisor_accuracy.py`) stays the reference.

Run: .venv/bin/python -m perf.advisor_virtual --profiles 30 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from typing import Any

from advisor.core.advise import advise
from advisor.core.samples import CacheProbe, Sample
from advisor.core.workload import Workload
from perf.advisor_accuracy import CONCURRENCIES, PARTS, PROMPT_LENGTHS, Simulator, lever_row
from simulator.closedloop import LoopPlan, run_closed_loop
from simulator.profile import profile_from_dict
from tests.advisor_tests.virtual import mean_e2e_ms, point_plan, to_samples

TEMPLATE_TOKENS = 10
"""Prompt tokens the chat template and the nonce add to a prompt of n words."""


def _plan(concurrency: int, prompt: int, output: int, jitter: float, **more: Any) -> LoopPlan:
    return point_plan(concurrency, prompt, output, jitter_ms=jitter, **more)


def evaluate(case: Any, jitter_ms: float, seed: int) -> dict[str, Any]:
    profile = profile_from_dict(case.config)
    samples: list[Sample] = []
    for c in CONCURRENCIES:
        for words in PROMPT_LENGTHS:
            plan = _plan(c, words + TEMPLATE_TOKENS, case.output_tokens, jitter_ms, seed=seed)
            samples += to_samples(run_closed_loop(profile, plan), c, words)
    prompt = case.prompt_words + TEMPLATE_TOKENS
    prefix = case.prefix_words
    workload = Workload(
        prompt_tokens=prompt,
        output_tokens=case.output_tokens,
        concurrency=case.concurrency,
        shared_prefix_tokens=prefix,
    )
    result = advise(
        samples,
        workload=workload,
        cache_probe=CacheProbe(server_caches=False),
        declared=case.declared,
    )
    blocks = result.to_report_blocks()
    promised = {r["lever"]: r["expected_saving_ms"] for r in blocks["recommendations"]}
    n, c = case.output_tokens, case.concurrency
    base_plan = _plan(c, prompt, n, jitter_ms, seed=seed, shared_prefix_tokens=prefix)
    before = mean_e2e_ms(profile, base_plan)
    variants: list[tuple[str, dict[str, Any], LoopPlan]] = [
        (
            "output_cap",
            case.config,
            _plan(c, prompt, n - n // 4, jitter_ms, seed=seed, shared_prefix_tokens=prefix),
        )
    ]
    if prefix:
        variants.append(("prompt_caching", Simulator.with_prefix_cache(case.config), base_plan))
    else:
        cut = round(0.75 * case.prompt_words) + TEMPLATE_TOKENS
        variants.append(("shorter_prompt", case.config, _plan(c, cut, n, jitter_ms, seed=seed)))
    if c >= 2:
        # A second replica behind a balancer: each replica serves half the clients.
        half = _plan(c // 2, prompt, n, jitter_ms, seed=seed, shared_prefix_tokens=prefix)
        variants.append(("scale_out", case.config, half))
    twin = Simulator.int4_twin(case.config)
    if twin is not None:
        variants.append(("quantization", twin, base_plan))
    levers = []
    for lever, config, plan in variants:
        if lever not in promised:
            continue
        after = mean_e2e_ms(profile_from_dict(config), plan)
        levers.append(lever_row(lever, promised[lever], before - after))
    parts = blocks["diagnosis"]["breakdown_ms"]
    return {
        "workload": {"prompt": prompt, "output": n, "concurrency": c, "prefix": prefix},
        "slots": case.config["max_batch_size"],
        "dtype": case.config["weight_dtype"],
        "advisor_ms": {k: round(parts[k], 1) for k in PARTS} if parts else None,
        "advisor_e2e_ms": round(sum(parts.values()), 1) if parts else None,
        "measured_e2e_ms": round(before, 1),
        "engine": None
        if result.fitted is None or result.fitted.model.engine is None
        else result.fitted.model.engine.to_dict(),
        "levers": levers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jitter-ms", type=float, default=1.0)
    parser.add_argument("--quiet", action="store_true", help="print the summary only")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.monotonic()
    rows = []
    for _ in range(args.profiles):
        row = evaluate(Simulator.random_case(rng), args.jitter_ms, args.seed)
        rows.append(row)
        if not args.quiet:
            print(json.dumps(row), flush=True)
    checks = [lv for r in rows for lv in r["levers"] if lv["error_pct"] is not None]
    by_lever: dict[str, list[float]] = {}
    for lv in checks:
        by_lever.setdefault(lv["lever"], []).append(lv["error_pct"])
    e2e_errors = [
        abs(r["advisor_e2e_ms"] - r["measured_e2e_ms"]) / r["measured_e2e_ms"] * 100
        for r in rows
        if r["advisor_e2e_ms"]
    ]
    summary = {
        "profiles": len(rows),
        "e2e_error_pct_median_abs": round(statistics.median(e2e_errors), 2),
        "e2e_error_pct_max_abs": round(max(e2e_errors), 2),
        "lever_checks": len(checks),
        "lever_within_25pct": f"{sum(abs(lv['error_pct']) <= 25 for lv in checks)}/{len(checks)}",
        "by_lever": {
            k: f"{sum(abs(e) <= 25 for e in v)}/{len(v)} {sorted(v)}" for k, v in by_lever.items()
        },
        "wall_s": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
