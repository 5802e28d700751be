"""How right is the advisor? Seeded random profiles of the independent reference server.

For each profile: sweep it with the harness's client, advise, and compare with the server's known
physics (prefill, TPOT, overhead, bottleneck); then apply levers on the server (turn the prefix
cache on, double the slots, cut the prompt or the output) and compare the measured saving with
the promised one. Run: .venv/bin/python -m perf.advisor_accuracy --profiles 12 --seed 1
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from advisor.core.advise import advise
from advisor.core.samples import CacheProbe
from advisor.core.workload import Workload
from tests.advisor_tests.indie_server import ServerParams, running
from tests.advisor_tests.measure import SweepPlan, sweep

PROMPT_LENGTHS = (64, 512, 2048)
CONCURRENCIES = (1, 4, 8)


@dataclass(frozen=True)
class Profile:
    params: ServerParams
    workload: Workload


def random_profile(rng: random.Random) -> Profile:
    params = ServerParams(
        overhead_ms=rng.uniform(1.0, 30.0),
        prefill_ms_per_token=10 ** rng.uniform(-2.7, -1.3),
        tpot_ms=rng.uniform(0.8, 4.0),
        slots=rng.choice((2, 4, 64)),
        batch_slope=rng.uniform(0.0, 0.04),
        tpot_ms_per_1k_context=rng.uniform(0.0, 0.5),
    )
    prompt_tokens = rng.randint(128, 2048)
    workload = Workload(
        prompt_tokens=prompt_tokens,
        output_tokens=rng.choice((16, 32, 48)),
        concurrency=rng.choice((1, 2, 4, 8)),
        shared_prefix_tokens=rng.choice((0, prompt_tokens // 2)),
    )
    return Profile(params, workload)


def truth_parts(params: ServerParams, workload: Workload) -> dict[str, float]:
    """The server's own breakdown for the workload (ms), no cache.

    TPOT averages the step over the response's contexts; the queue is the steady state of a
    deterministic closed loop: c clients, s slots, a cycle of max(O + S, c·S/s).
    """
    p, n, c = workload.prompt_tokens or 0, workload.output_tokens or 0, workload.concurrency or 1
    active = min(c, params.slots)
    tpot_ms = params.step_ms(active, p + (n - 2) // 2)
    prefill_ms = params.prefill_ms(p)
    service_ms = prefill_ms + (n - 1) * tpot_ms
    queue_ms = max(c * service_ms / params.slots - params.overhead_ms - service_ms, 0.0)
    return {
        "overhead": params.overhead_ms,
        "queueing": queue_ms,
        "prefill": prefill_ms,
        "decode": (n - 1) * tpot_ms,
        "tpot_c1": params.step_ms(1, p + (n - 2) // 2),
    }


def point_e2e_ms(base_url: str, workload: Workload, *, prefix_tokens: int = 0) -> float:
    """Mean E2E (10% trimmed) of the workload's own point, measured."""
    c = workload.concurrency or 1
    records = sweep(
        base_url,
        SweepPlan(
            prompt_lengths=(workload.prompt_tokens or 0,),
            concurrencies=(c,),
            output_tokens=workload.output_tokens or 16,
            requests=max(8, 5 * c),
            prefix_tokens=prefix_tokens,
        ),
    )
    values = sorted(r.e2e_ms for r in records if r.outcome == "success" and not r.warmup)
    cut = len(values) // 10
    return statistics.fmean(values[cut : len(values) - cut])


def lever_checks(profile: Profile, promised: dict[str, float]) -> list[dict[str, Any]]:
    """Apply each lever the advisor priced on the server, measure the saving, compare."""
    params, workload = profile.params, profile.workload
    prefix = workload.shared_prefix_tokens
    applied: list[tuple[str, ServerParams, Workload, ServerParams]] = []
    cut_prompt = replace(workload, prompt_tokens=round(0.75 * (workload.prompt_tokens or 0)))
    if prefix == 0:
        applied.append(("shorter_prompt", params, cut_prompt, params))
    n = workload.output_tokens or 16
    cut_output = replace(workload, output_tokens=n - math.floor(0.25 * n))
    applied.append(("output_cap", params, cut_output, params))
    if prefix:
        cached = replace(params, prefix_cache=True)
        applied.append(("prompt_caching", params, workload, cached))
    more_slots = replace(params, slots=2 * params.slots)
    applied.append(("scale_out", params, workload, more_slots))
    rows = []
    for lever, before_params, after_workload, after_params in applied:
        if lever not in promised:
            continue
        with running(before_params) as url:
            before = point_e2e_ms(url, workload, prefix_tokens=prefix)
        with running(after_params) as url:
            after = point_e2e_ms(url, after_workload, prefix_tokens=prefix)
        measured = before - after
        rows.append(
            {
                "lever": lever,
                "promised_ms": round(promised[lever], 2),
                "measured_ms": round(measured, 2),
                "error_pct": round((promised[lever] - measured) / measured * 100, 1)
                if abs(measured) > 1.0
                else None,
            }
        )
    return rows


def evaluate(profile: Profile, *, check_levers: bool) -> dict[str, Any]:
    params, workload = profile.params, profile.workload
    c_max = max(CONCURRENCIES)
    with running(params) as url:
        records = sweep(
            url,
            SweepPlan(
                prompt_lengths=PROMPT_LENGTHS,
                concurrencies=CONCURRENCIES,
                output_tokens=workload.output_tokens or 16,
                requests=5 * c_max,
            ),
        )
    probe = CacheProbe(server_caches=False)
    result = advise(records, workload=workload, cache_probe=probe)
    blocks = result.to_report_blocks()
    diagnosis, model = blocks["diagnosis"], blocks["latency_model"]
    truth = truth_parts(params, workload)
    parts = diagnosis["breakdown_ms"]
    ranked = sorted(("overhead", "queueing", "prefill", "decode"), key=lambda k: -truth[k])
    margin = truth[ranked[0]] / max(truth[ranked[1]], 1e-9)
    p = workload.prompt_tokens or 0
    row: dict[str, Any] = {
        "params": asdict(params),
        "workload": {k: v for k, v in asdict(workload).items() if v is not None},
        "truth_bottleneck": ranked[0],
        "truth_margin": round(margin, 2),
        "verdict": diagnosis["bottleneck"],
        "breakdown_bottleneck": max(
            ("overhead", "queueing", "prefill", "decode"), key=lambda k: parts[k]
        ),
        "confidence": diagnosis["confidence"],
        "reasons": [r["code"] for r in diagnosis["reasons"]],
        "prefill_error_pct": round(
            (model["prefill_ms"] - params.prefill_ms(p)) / params.prefill_ms(p) * 100, 2
        ),
        "prefill_error_ms": round(model["prefill_ms"] - params.prefill_ms(p), 2),
        "tpot_error_pct": round((model["tpot_ms"] - truth["tpot_c1"]) / truth["tpot_c1"] * 100, 2),
        "overhead_error_ms": round(model["overhead_ms"] - params.overhead_ms, 2),
        "queue_error_ms": round(parts["queueing"] - truth["queueing"], 2),
        "decode_error_pct": round((parts["decode"] - truth["decode"]) / truth["decode"] * 100, 2),
    }
    if check_levers:
        promised = {r["lever"]: r["expected_saving_ms"] for r in blocks["recommendations"]}
        row["levers"] = lever_checks(profile, promised)
    return row


def _count(rows: list[dict[str, Any]], predicate: Callable[[dict[str, Any]], bool]) -> str:
    return f"{sum(predicate(r) for r in rows)}/{len(rows)}"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def worst(key: str) -> float:
        return max(abs(r[key]) for r in rows)

    clear = [r for r in rows if r["truth_margin"] >= 1.2]
    close = [r for r in rows if r["truth_margin"] < 1.2]
    levers = [lv for r in rows for lv in r.get("levers", []) if lv["error_pct"] is not None]
    return {
        "profiles": len(rows),
        "prefill_error_pct_max_abs": worst("prefill_error_pct"),
        "prefill_error_ms_max_abs": worst("prefill_error_ms"),
        "prefill_error_pct_median_abs": statistics.median(
            abs(r["prefill_error_pct"]) for r in rows
        ),
        "tpot_error_pct_max_abs": worst("tpot_error_pct"),
        "overhead_error_ms_max_abs": worst("overhead_error_ms"),
        "decode_error_pct_max_abs": worst("decode_error_pct"),
        "queue_error_ms_max_abs": worst("queue_error_ms"),
        "breakdown_names_truth_when_clear": _count(
            clear, lambda r: r["breakdown_bottleneck"] == r["truth_bottleneck"]
        ),
        "verdict_right_when_clear": _count(clear, lambda r: r["verdict"] == r["truth_bottleneck"]),
        "close_calls_right_or_low_confidence": _count(
            close,
            lambda r: r["verdict"] == r["truth_bottleneck"] or (r["confidence"] or 0) < 0.6,
        ),
        "lever_checks": len(levers),
        "lever_within_25pct": _count(levers, lambda lv: abs(lv["error_pct"]) <= 25),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--levers", type=int, default=6, help="profiles whose levers are applied")
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows = []
    started = time.monotonic()
    for index in range(args.profiles):
        row = evaluate(random_profile(rng), check_levers=index < args.levers)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "params"}), flush=True)
    summary = summarise(rows)
    summary["wall_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "summary": summary}, handle, indent=2)


if __name__ == "__main__":
    main()
