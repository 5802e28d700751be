"""As a user would: `python -m simulator` in one process, `manage.py bench` in another.

The simulator logs what really happened to every request (ground truth); the bench report must
agree with it, count tokens from usage, and see the prefix cache only where there is one.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.report_schema import ADVISOR_SECTIONS
from benchmarks.harness.metrics import undocumented_fields

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def simulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    log = tmp_path_factory.mktemp("sim") / "ground-truth.jsonl"
    process = subprocess.Popen(
        [
            sys.executable, "-m", "simulator", "--port", "0",
            "--preset", "llama-8b-h100", "--preset", "llama-8b-h100-cache",
            "--ground-truth-log", str(log),
        ],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"(http://\S+/v1)", line)
    assert match, line
    yield match.group(1), log
    process.terminate()
    process.wait(timeout=30)


def _bench(
    base_url: str, model: str, report: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    return subprocess.run(
        [
            sys.executable, "manage.py", "bench", "--base-url", base_url, "--model", model,
            "--json", str(report), *extra,
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def _ground_truth(log: Path, model: str, prompt_tokens_near: int) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [
        line
        for line in lines
        if line["model"] == model
        and line["stream"]
        and abs(int(line["prompt_tokens"]) - prompt_tokens_near) <= 0.1 * prompt_tokens_near
        and int(line["completion_tokens"]) >= 2
    ]


def test_report_matches_the_servers_own_timing(simulator: tuple[str, Path], tmp_path: Path) -> None:
    base_url, log = simulator
    report_path = tmp_path / "report.json"
    result = _bench(
        base_url, "llama-8b-h100", report_path,
        "--prompt-tokens", "256", "--output-tokens", "24", "--concurrency", "1",
        "--requests", "10",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Sending at most" in result.stdout
    report = json.loads(report_path.read_text())
    assert report["schema_version"] == "1.0"
    assert report["valid"] is True
    (point,) = report["points"]
    assert point["succeeded"] == 10
    assert point["tokens_estimated"] is False
    assert point["output_tokens"] == pytest.approx(24, abs=0.5)
    assert point["prompt_tokens"] == pytest.approx(256, rel=0.1)
    truth = _ground_truth(log, "llama-8b-h100", 256)
    assert len(truth) >= 10
    true_ttft_ms = statistics.median(float(line["chunk_offsets_ms"][0]) for line in truth)
    true_tpot_ms = statistics.median(
        (float(line["chunk_offsets_ms"][-1]) - float(line["chunk_offsets_ms"][0]))
        / (int(line["completion_tokens"]) - 1)
        for line in truth
    )
    # Generous bounds: CI shares two cores. perf/harness_timing.py measures the real error.
    assert point["ttft_ms"]["p50"] - true_ttft_ms == pytest.approx(0, abs=5.0)
    assert point["tpot_ms"]["p50"] == pytest.approx(true_tpot_ms, abs=0.5)


def test_cache_probe_sees_a_prefix_cache_only_where_there_is_one(
    simulator: tuple[str, Path], tmp_path: Path
) -> None:
    base_url, _ = simulator
    verdicts = {}
    for model in ("llama-8b-h100", "llama-8b-h100-cache"):
        report_path = tmp_path / f"{model}.json"
        result = _bench(
            base_url, model, report_path,
            "--prompt-tokens", "1024", "--output-tokens", "4", "--concurrency", "1",
            "--requests", "1", "--cache-probe",
        )  # fmt: skip
        # One request per point is too few for a valid run (exit 3); the probe still reports.
        assert result.returncode in (0, 3), result.stdout + result.stderr
        verdicts[model] = json.loads(report_path.read_text())["cache_probe"]["server_caches"]
    assert verdicts == {"llama-8b-h100": False, "llama-8b-h100-cache": True}


def test_bench_names_the_bottleneck_and_prices_the_levers(
    simulator: tuple[str, Path], tmp_path: Path
) -> None:
    """llama-8b-h100 writes 64 tokens at ~6 ms each after a ~20-60 ms prefill: decode-bound."""
    base_url, _ = simulator
    report_path = tmp_path / "advised.json"
    result = _bench(
        base_url, "llama-8b-h100", report_path,
        "--prompt-tokens", "128,512,1024", "--output-tokens", "64", "--concurrency", "1",
        "--requests", "10", "--workload-prompt-tokens", "600", "--workload-output-tokens", "64",
        "--hardware", "h100-sxm", "--declared-model", "llama-3.1-8b", "--dtype", "bf16",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "decode-bound" in result.stdout
    report = json.loads(report_path.read_text())
    diagnosis = report["diagnosis"]
    assert diagnosis["bottleneck"] == "decode"
    assert diagnosis["ttft_bottleneck"] == "prefill"
    assert diagnosis["workload"]["prompt_tokens"] == 600
    breakdown = diagnosis["breakdown_ms"]
    # ~63 tokens x ~6.3 ms each, from the preset's physics (docs/simulator.md).
    assert 300 < breakdown["decode"] < 500
    assert diagnosis["roofline"] is not None
    levers = [item["lever"] for item in report["recommendations"]]
    assert "quantization" in levers
    assert all(item["expected_saving_ms"] is not None for item in report["recommendations"])
    assert report["latency_model"]["tpot_ms"] == pytest.approx(6.3, rel=0.15)
    # Every field the advisor wrote is documented in docs/report-schema.md.
    assert undocumented_fields(report, ADVISOR_SECTIONS) == []


@pytest.mark.parametrize(
    "flags",
    [
        ["--hardware", "h100-sxm"],
        ["--hardware", "tpu-v9", "--declared-model", "llama-3.1-8b", "--dtype", "bf16"],
        ["--workload-concurrency", "0"],
        ["--objective", "cheapest"],
        ["--devices", "0"],
    ],
)
def test_bad_advisor_flags_are_usage_errors_before_any_request(
    flags: list[str], tmp_path: Path
) -> None:
    # Port 9 (discard) on loopback: a request sent there would fail with exit 4, not 2.
    result = _bench("http://127.0.0.1:9/v1", "m", tmp_path / "r.json", *flags)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Sending" not in result.stdout
