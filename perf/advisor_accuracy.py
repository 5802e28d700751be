"""How right is the advisor? Seeded random profiles of two servers whose physics is known.

`--server indie`: the independent reference server in tests/ (explicit overhead, prefill per
token, TPOT, slots): the truth is its parameters. `--server simulator`: random simulator
profiles (model x GPU x dtype x batch size): the truth is the simulator's ground-truth log at
the workload's own point. Each profile is swept with the harness's client and advised on; then
levers are applied on the server (prefix cache on, int4 twin, a second replica, a shorter prompt
or output) and the measured saving is compared with the promised one.

Run: .venv/bin/python -m perf.advisor_accuracy --server indie --profiles 12 --seed 1
     .venv/bin/python -m perf.advisor_accuracy --server simulator --profiles 30 --seed 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.core.advise import advise
from advisor.core.samples import CacheProbe, Declared
from advisor.core.workload import Workload
from tests.advisor_tests.indie_server import ServerParams, running
from tests.advisor_tests.measure import SweepPlan, sweep

PARTS = ("overhead", "queueing", "prefill", "decode")
PROMPT_LENGTHS = (64, 512, 2048)
CONCURRENCIES = (1, 4, 8)
REQUESTS_PER_CLIENT = 5
SIM_MODELS = ("llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-3.2-1b")
SIM_HARDWARE = ("h100-sxm", "h200", "a100-80gb", "l40s")


@dataclass(frozen=True)
class Case:
    """One server configuration and the workload the advice is for (prompt in words)."""

    config: Any
    prompt_words: int
    output_tokens: int
    concurrency: int
    prefix_words: int = 0
    declared: Declared = field(default_factory=Declared)


class Indie:
    """The independent server: truth from its parameters."""

    name = "indie"
    model = "indie"

    @staticmethod
    def random_case(rng: random.Random) -> Case:
        params = ServerParams(
            overhead_ms=10 ** rng.uniform(0.0, 1.8),
            prefill_ms_per_token=10 ** rng.uniform(-2.5, -1.0),
            tpot_ms=rng.uniform(0.8, 4.0),
            slots=rng.choice((2, 4, 64)),
            batch_slope=rng.uniform(0.0, 0.04),
            tpot_ms_per_1k_context=rng.uniform(0.0, 0.5),
        )
        words = rng.randint(128, 2048)
        return Case(
            config=params,
            prompt_words=words,
            output_tokens=rng.choice((8, 16, 32)),
            concurrency=rng.choice((1, 2, 4, 8)),
            prefix_words=rng.choice((0, words // 2)),
        )

    @staticmethod
    @contextlib.contextmanager
    def serve(config: ServerParams) -> Iterator[str]:
        with running(config) as url:
            yield url

    @staticmethod
    def with_prefix_cache(config: ServerParams) -> ServerParams:
        return replace(config, prefix_cache=True)

    @staticmethod
    def int4_twin(config: ServerParams) -> ServerParams | None:
        return None

    @staticmethod
    def truth(case: Case) -> dict[str, float]:
        """The server's own breakdown for the workload (ms), no cache.

        TPOT averages the step over the response's contexts; the queue is the steady state of
        a deterministic closed loop: c clients, s slots, a cycle of max(O + S, c·S/s).
        """
        params: ServerParams = case.config
        p, n, c = case.prompt_words + 1, case.output_tokens, case.concurrency
        tpot_ms = params.step_ms(min(c, params.slots), p + (n - 2) // 2)
        prefill_ms = params.prefill_ms(p)
        service_ms = prefill_ms + (n - 1) * tpot_ms
        queue_ms = max(c * service_ms / params.slots - params.overhead_ms - service_ms, 0.0)
        return {
            "overhead": params.overhead_ms,
            "queueing": queue_ms,
            "prefill": prefill_ms,
            "decode": (n - 1) * tpot_ms,
            "tpot_c1": params.step_ms(1, p + (n - 2) // 2),
            "prompt_tokens": p,
        }


class Simulator:
    """The built-in simulator as a subprocess; truth from its ground-truth log."""

    name = "simulator"
    model = "acc"
    time_scale = 1.0

    @staticmethod
    def random_case(rng: random.Random) -> Case:
        model = rng.choice(SIM_MODELS)
        hardware = rng.choice(SIM_HARDWARE)
        dtype = rng.choice(("bf16", "bf16", "fp8"))
        profile = {
            "name": "acc",
            "description": "advisor accuracy profile",
            "model": model,
            "hardware": hardware,
            "weight_dtype": dtype,
            "kv_dtype": "bf16",
            "mfu": round(rng.uniform(0.3, 0.6), 3),
            # Bandwidth efficiency and a per-step fixed cost (scheduling, sampling, launches)
            # apart, as public single-request figures imply (docs/advisor.md, Quantization):
            # 0.8-0.9 of peak bandwidth plus about 1 ms a step on one GPU.
            "mbu": round(rng.uniform(0.75, 0.9), 3),
            "max_batch_size": rng.choice((2, 4, 64)),
            "request_overhead_ms": round(10 ** rng.uniform(0.3, 1.5), 2),
            "step_overhead_ms": round(rng.uniform(0.5, 2.0), 2),
        }
        words = rng.randint(128, 2048)
        return Case(
            config=profile,
            prompt_words=words,
            output_tokens=rng.choice((16, 32, 64)),
            concurrency=rng.choice((1, 2, 4, 8)),
            prefix_words=rng.choice((0, words // 2)),
            declared=Declared(hardware=hardware, model=model, dtype=dtype),
        )

    @classmethod
    @contextlib.contextmanager
    def serve(cls, config: dict[str, Any], log: Path | None = None) -> Iterator[str]:
        with tempfile.TemporaryDirectory() as folder:
            profile_path = Path(folder) / "profile.json"
            profile_path.write_text(json.dumps(config))
            argv = [sys.executable, "-m", "simulator", "--profile", str(profile_path)]
            argv += ["--port", "0", "--time-scale", str(cls.time_scale)]
            if log is not None:
                argv += ["--ground-truth-log", str(log)]
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
            try:
                assert process.stdout is not None
                line = process.stdout.readline()
                if "http://" not in line:
                    raise RuntimeError(f"simulator did not start: {line!r}")
                yield line[line.index("http://") :].split()[0]
            finally:
                process.terminate()
                process.wait(timeout=10)

    @staticmethod
    def with_prefix_cache(config: dict[str, Any]) -> dict[str, Any]:
        return {**config, "prefix_cache": True}

    @staticmethod
    def int4_twin(config: dict[str, Any]) -> dict[str, Any] | None:
        return None if config["weight_dtype"] == "int4" else {**config, "weight_dtype": "int4"}

    @classmethod
    def _ground_truth(cls, case: Case, concurrency: int) -> dict[str, float]:
        """Means over the measured requests of one point (ms, real time)."""
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "truth.jsonl"
            with cls.serve(case.config, log) as url:
                records = sweep(url, _point_plan(case, concurrency, cls.model))
            lines = [json.loads(line) for line in log.read_text().splitlines()]
        lines.sort(key=lambda r: r["arrival_ns"])
        measured = lines[concurrency:]  # the first c are the warm-up
        prompt = statistics.median(r["prompt_tokens"] for r in measured)
        mean = _trimmed_mean
        decode = [r["chunk_offsets_ms"][-1] - r["chunk_offsets_ms"][0] for r in measured]
        return {
            "overhead": mean([r["request_overhead_ms"] + r["network_delay_ms"] for r in measured]),
            "queue": mean([r["queue_ms"] for r in measured]),
            "prefill": mean([r["prefill_ms"] for r in measured]),
            "decode": mean(decode),
            "tpot": mean(
                [d / (r["completion_tokens"] - 1) for d, r in zip(decode, measured, strict=True)]
            ),
            "prompt_tokens": prompt,
            "e2e_ms": _point_e2e(records),
        }

    @classmethod
    def truth(cls, case: Case) -> dict[str, float]:
        """The glossary's parts from the ground truth: queueing is TTFT at c above TTFT at 1."""
        at_c = cls._ground_truth(case, case.concurrency)
        at_1 = at_c if case.concurrency == 1 else cls._ground_truth(case, 1)
        ttft_c = at_c["overhead"] + at_c["queue"] + at_c["prefill"]
        return {
            "overhead": at_1["overhead"],
            "queueing": max(ttft_c - at_1["overhead"] - at_1["prefill"], 0.0),
            "prefill": at_1["prefill"],
            "decode": at_c["decode"],
            "tpot_c1": at_1["tpot"],
            "prompt_tokens": at_1["prompt_tokens"],
        }


SERVERS: dict[str, Any] = {"indie": Indie, "simulator": Simulator}


def _trimmed_mean(values: list[float]) -> float:
    ordered = sorted(values)
    cut = len(ordered) // 10
    return statistics.fmean(ordered[cut : len(ordered) - cut])


def _point_plan(case: Case, concurrency: int, model: str, **changes: int) -> SweepPlan:
    words = changes.get("prompt_words", case.prompt_words)
    return SweepPlan(
        prompt_lengths=(words,),
        concurrencies=(concurrency,),
        output_tokens=changes.get("output_tokens", case.output_tokens),
        requests=8,
        requests_per_client=REQUESTS_PER_CLIENT,
        prefix_tokens=case.prefix_words if words > case.prefix_words else 0,
        model=model,
    )


def _point_e2e(records: list[Any]) -> float:
    """Mean E2E (10% trimmed) of a point's measured requests."""
    return _trimmed_mean([r.e2e_ms for r in records if r.outcome == "success" and not r.warmup])


def lever_checks(server: Any, case: Case, promised: dict[str, float]) -> list[dict[str, Any]]:
    """Apply each lever the advisor priced on the server, measure the saving, compare."""
    variants: list[tuple[str, Any, dict[str, int]]] = [
        ("output_cap", case.config, {"output_tokens": case.output_tokens - case.output_tokens // 4})
    ]
    if case.prefix_words:
        variants.append(("prompt_caching", server.with_prefix_cache(case.config), {}))
    else:
        cut = {"prompt_words": round(0.75 * case.prompt_words)}
        variants.append(("shorter_prompt", case.config, cut))
    if case.concurrency >= 2:
        # A second replica behind a balancer that pins each client to one replica: each
        # replica serves half the clients, so the point is measured at half the concurrency.
        variants.append(("scale_out", case.config, {"concurrency": case.concurrency // 2}))
    twin = server.int4_twin(case.config)
    if twin is not None:
        variants.append(("quantization", twin, {}))
    rows = []
    for lever, after_config, changes in variants:
        if lever not in promised:
            continue
        with server.serve(case.config) as url:
            before = _point_e2e(sweep(url, _point_plan(case, case.concurrency, server.model)))
        with server.serve(after_config) as url:
            concurrency = changes.pop("concurrency", case.concurrency)
            plan = _point_plan(case, concurrency, server.model, **changes)
            after = _point_e2e(sweep(url, plan))
        rows.append(lever_row(lever, promised[lever], before - after))
    return rows


def lever_row(lever: str, promised_ms: float, measured_ms: float) -> dict[str, Any]:
    """A lever check; the error (%) only when the measured saving exceeds 1 ms."""
    error = (promised_ms - measured_ms) / measured_ms * 100 if abs(measured_ms) > 1.0 else None
    return {
        "lever": lever,
        "promised_ms": round(promised_ms, 2),
        "measured_ms": round(measured_ms, 2),
        "error_pct": None if error is None else round(error, 1),
    }


def evaluate(server: Any, case: Case, *, check_levers: bool) -> dict[str, Any]:
    with server.serve(case.config) as url:
        records = sweep(
            url,
            SweepPlan(
                prompt_lengths=PROMPT_LENGTHS,
                concurrencies=CONCURRENCIES,
                output_tokens=case.output_tokens,
                requests=8,
                requests_per_client=REQUESTS_PER_CLIENT,
                model=server.model,
            ),
        )
    truth = server.truth(case)
    prompt_tokens = round(truth["prompt_tokens"])
    prefix_tokens = round(case.prefix_words * prompt_tokens / (case.prompt_words + 1))
    workload = Workload(
        prompt_tokens=prompt_tokens,
        output_tokens=case.output_tokens,
        concurrency=case.concurrency,
        shared_prefix_tokens=prefix_tokens,
    )
    probe = CacheProbe(server_caches=False)
    result = advise(records, workload=workload, cache_probe=probe, declared=case.declared)
    blocks = result.to_report_blocks()
    diagnosis, model = blocks["diagnosis"], blocks["latency_model"]
    parts = diagnosis["breakdown_ms"]
    ranked = sorted(PARTS, key=lambda k: -truth[k])
    margin = truth[ranked[0]] / max(truth[ranked[1]], 1e-9)
    row: dict[str, Any] = {
        "config": asdict(case.config) if server is Indie else case.config,
        "workload": {
            "prompt_tokens": prompt_tokens,
            "output_tokens": case.output_tokens,
            "concurrency": case.concurrency,
            "shared_prefix_tokens": prefix_tokens,
        },
        "truth_ms": {k: round(truth[k], 2) for k in PARTS},
        "advisor_ms": {k: round(parts[k], 2) for k in PARTS},
        "truth_bottleneck": ranked[0],
        "truth_margin": round(margin, 2),
        "verdict": diagnosis["bottleneck"],
        "breakdown_bottleneck": max(PARTS, key=lambda k: parts[k]),
        "confidence": diagnosis["confidence"],
        "reasons": [r["code"] for r in diagnosis["reasons"]],
        "prefill_error_pct": round(
            (parts["prefill"] - truth["prefill"]) / truth["prefill"] * 100, 2
        ),
        "prefill_error_ms": round(parts["prefill"] - truth["prefill"], 2),
        "tpot_error_pct": round((model["tpot_ms"] - truth["tpot_c1"]) / truth["tpot_c1"] * 100, 2),
        "overhead_error_ms": round(model["overhead_ms"] - truth["overhead"], 2),
        "queue_error_ms": round(parts["queueing"] - truth["queueing"], 2),
        "decode_error_pct": round((parts["decode"] - truth["decode"]) / truth["decode"] * 100, 2),
    }
    if check_levers:
        promised = {r["lever"]: r["expected_saving_ms"] for r in blocks["recommendations"]}
        row["levers"] = lever_checks(server, case, promised)
    return row


def _count(rows: list[dict[str, Any]], predicate: Callable[[dict[str, Any]], bool]) -> str:
    return f"{sum(predicate(r) for r in rows)}/{len(rows)}"


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def worst(key: str) -> float:
        return max(abs(r[key]) for r in rows)

    def median_abs(key: str) -> float:
        return round(statistics.median(abs(r[key]) for r in rows), 2)

    clear = [r for r in rows if r["truth_margin"] >= 1.2]
    close = [r for r in rows if r["truth_margin"] < 1.2]
    levers = [lv for r in rows for lv in r.get("levers", []) if lv["error_pct"] is not None]
    by_lever: dict[str, list[float]] = {}
    for lv in levers:
        by_lever.setdefault(lv["lever"], []).append(lv["error_pct"])
    return {
        "profiles": len(rows),
        "prefill_error_pct_median_abs": median_abs("prefill_error_pct"),
        "prefill_error_pct_max_abs": worst("prefill_error_pct"),
        "prefill_error_ms_max_abs": worst("prefill_error_ms"),
        "prefill_within_10pct_or_1ms": _count(
            rows, lambda r: abs(r["prefill_error_pct"]) <= 10 or abs(r["prefill_error_ms"]) <= 1
        ),
        "tpot_error_pct_median_abs": median_abs("tpot_error_pct"),
        "tpot_error_pct_max_abs": worst("tpot_error_pct"),
        "tpot_within_5pct": _count(rows, lambda r: abs(r["tpot_error_pct"]) <= 5),
        "overhead_error_ms_max_abs": worst("overhead_error_ms"),
        "overhead_within_10ms": _count(rows, lambda r: abs(r["overhead_error_ms"]) <= 10),
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
        "lever_error_pct": {k: sorted(v) for k, v in by_lever.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=sorted(SERVERS), default="indie")
    parser.add_argument("--profiles", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--levers", type=int, default=8, help="profiles whose levers are applied")
    parser.add_argument("--json", help="write every row here")
    args = parser.parse_args()
    server = SERVERS[args.server]
    rng = random.Random(args.seed)
    rows = []
    started = time.monotonic()
    for index in range(args.profiles):
        case = server.random_case(rng)
        row = evaluate(server, case, check_levers=index < args.levers)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "config"}), flush=True)
    summary = summarise(rows)
    summary["wall_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
