"""Whole benches through the command line and `run_bench`: report, exit codes, calibration."""

from __future__ import annotations

import argparse
import io
import json
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import cli
from benchmarks.harness.config import EndpointConfig
from benchmarks.harness.errors import HarnessError
from benchmarks.harness.metrics import WARNING_CODES, undocumented_fields
from benchmarks.harness.plan import Plan
from benchmarks.harness.records import RequestRecord
from benchmarks.harness.sweep import BenchConfig, run_bench
from tests.harness_tests.fault_server import FaultServer, wait_for

NONCE = re.compile(r"^\[request [0-9a-f]{16}\]$")


@dataclass
class Bench:
    code: int
    out: str
    err: str
    report: dict[str, Any] | None
    server: FaultServer


def run_cli(server: FaultServer, tmp_path: Path, *options: str, model: str = "ok") -> Bench:
    path = tmp_path / "report.json"
    path.unlink(missing_ok=True)
    argv = ["--base-url", server.base_url, "--model", model, "--json", str(path), *options]
    out, err = io.StringIO(), io.StringIO()
    args = cli.build_parser().parse_args(argv)
    code = cli.run_from_args(args, out=out, err=err)
    report = json.loads(path.read_text()) if path.exists() else None
    return Bench(code, out.getvalue(), err.getvalue(), report, server)


CLIENT_NOISE = {"loop_lag", "client_saturated", "client_delay"}


def bench(tmp_path: Path, *options: str, model: str = "ok", **server_options: Any) -> Bench:
    """Run the CLI against a fresh fault server. These tests share two cores with other work:
    when the run reports client-side noise (an OS stall reads as loop lag), run once more."""
    for attempt in range(2):
        with FaultServer(**server_options) as server:
            run = run_cli(server, tmp_path, *options, model=model)
        warnings = {w["code"] for w in (run.report or {}).get("warnings", [])}
        if attempt or not warnings & CLIENT_NOISE:
            break
    return run


def assert_valid_or_client_noise(code: int, report: dict[str, Any]) -> None:
    """Exit 0, or exit 3 for nothing but the client-side noise of a shared machine."""
    assert {w["code"] for w in report["warnings"]} <= CLIENT_NOISE, report["warnings"]
    assert code == (cli.EXIT_OK if report["valid"] else cli.EXIT_INVALID_RUN)


SMALL = ("--prompt-tokens", "64", "--output-tokens", "3", "--concurrency", "2", "--requests", "10")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """One sweep with a cache probe against a server that caches prefixes and reports it."""
    return bench(
        tmp_path_factory.mktemp("sweep"),
        "--prompt-tokens",
        "128,1024",
        "--output-tokens",
        "4",
        "--concurrency",
        "1,4",
        "--requests",
        "10",
        "--cache-probe",
        model="caching",
        prefill_s_per_token=2e-5,
        token_delay_s=0.002,
    )


def test_a_sweep_gives_a_valid_report_and_exit_code_0(sweep: Bench) -> None:
    assert sweep.code == cli.EXIT_OK, sweep.out + sweep.err
    assert sweep.report is not None
    assert sweep.report["valid"] is True
    assert sweep.report["schema_version"] == "1.0"
    assert sweep.report["endpoint"] == {
        "base_url": sweep.server.base_url,
        "model": "caching",
        "api": "chat",
    }
    assert [(p["target_prompt_tokens"], p["concurrency"]) for p in sweep.report["points"]] == [
        (128, 1),
        (128, 4),
        (1024, 1),
        (1024, 4),
    ]


def test_every_report_field_has_a_metric_entry(sweep: Bench) -> None:
    assert sweep.report is not None
    assert undocumented_fields(sweep.report) == []
    sweep.report["points"][0]["ttft_ms"]["p42"] = 1.0
    sweep.report["surprise"] = True
    try:
        assert undocumented_fields(sweep.report) == ["points[].ttft_ms.p42", "surprise"]
    finally:
        del sweep.report["points"][0]["ttft_ms"]["p42"], sweep.report["surprise"]


def test_it_announces_at_least_as_many_requests_as_it_sends(sweep: Bench) -> None:
    match = re.search(r"Sending at most (\d+) requests", sweep.out)
    assert match is not None, sweep.out
    announced = int(match.group(1))
    assert len(sweep.server.requests) <= announced
    assert len(sweep.server.requests) >= 4 * (10 + 1) + 9  # measured, warm-up 1 and 4, probe


def test_points_count_measured_requests_only(sweep: Bench) -> None:
    assert sweep.report is not None
    for point in sweep.report["points"]:
        assert (point["requests"], point["succeeded"], point["errors"]) == (10, 10, {})
        assert point["ttft_ms"]["n"] == 10
        assert point["output_tokens"] == 4
        assert point["tpot_ms"] is not None
        assert point["itl_ms"]["n"] == 30
        assert point["goodput"] is None


def test_prompts_are_calibrated_within_ten_percent(sweep: Bench) -> None:
    assert sweep.report is not None
    calibration = sweep.report["plan"]["calibration"]
    assert calibration["measured"]
    for point in sweep.report["points"]:
        assert point["prompt_tokens"] == pytest.approx(point["target_prompt_tokens"], rel=0.1)


def test_every_sweep_request_begins_with_a_unique_nonce(sweep: Bench) -> None:
    sweep_requests = [r for r in sweep.server.requests if r.get("max_tokens") == 4]
    first_lines = [r["messages"][0]["content"].split("\n", 1)[0] for r in sweep_requests]
    assert len(first_lines) == 4 * 10 + 1 + 4 + 1 + 4
    assert all(NONCE.match(line) for line in first_lines)
    assert len(set(first_lines)) == len(first_lines)
    assert sweep.report is not None
    assert all((p["cached_prompt_tokens"] or 0) < 5 for p in sweep.report["points"])


def test_it_asks_for_usage_and_an_exact_output_length(sweep: Bench) -> None:
    request = next(r for r in sweep.server.requests if r.get("max_tokens") == 4)
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert (request["ignore_eos"], request["min_tokens"]) == (True, 4)
    assert sweep.report is not None
    assert sweep.report["plan"]["output_controls"] == ["max_tokens", "ignore_eos", "min_tokens"]


def test_the_cache_probe_sees_reported_cached_tokens(sweep: Bench) -> None:
    assert sweep.report is not None
    probe = sweep.report["cache_probe"]
    assert probe["server_caches"] is True
    assert "cached prompt tokens" in probe["evidence"]
    assert probe["target_prompt_tokens"] == 1024
    assert probe["warm_cached_prompt_tokens"] > 900
    assert probe["cold_cached_prompt_tokens"] < 5
    assert probe["warm_ttft_ms"] < probe["cold_ttft_ms"]


def test_the_table_shows_every_point(sweep: Bench) -> None:
    assert "ttft p50" in sweep.out
    assert len(re.findall(r"^\s+(128|1024)\s+4\s+[14]\s+10/10", sweep.out, re.M)) == 4
    assert "cache probe: cold" in sweep.out
    assert "valid run" in sweep.out


@pytest.mark.parametrize(
    ("model", "expected"),
    [("caching:silent", True), ("ok", False)],
)
def test_the_cache_probe_reads_timing_when_nothing_is_reported(
    tmp_path: Path, model: str, expected: bool
) -> None:
    run = bench(tmp_path, *SMALL, "--cache-probe", model=model, prefill_s_per_token=4e-5)
    assert run.report is not None
    probe = run.report["cache_probe"]
    assert probe["server_caches"] is expected, probe["evidence"]
    assert probe["warm_cached_prompt_tokens"] is None


def test_a_server_without_usage_is_flagged_not_invalid(tmp_path: Path) -> None:
    run = bench(tmp_path, *SMALL, model="no_usage")
    assert run.code == cli.EXIT_OK, run.out
    assert run.report is not None
    codes = {warning["code"] for warning in run.report["warnings"]}
    assert "usage_missing" in codes
    assert run.report["points"][0]["tokens_estimated"] is True
    assert run.report["plan"]["calibration"]["measured"] is False
    assert run.report["valid"] is True


def test_several_tokens_per_chunk_are_flagged(tmp_path: Path) -> None:
    run = bench(tmp_path, *SMALL, model="multi")
    assert run.report is not None
    assert "chunk_usage_mismatch" in {w["code"] for w in run.report["warnings"]}
    assert run.report["points"][0]["output_tokens"] == 3
    assert run.code == cli.EXIT_OK


@pytest.mark.parametrize(("slo_ms", "expected"), [("10000", 1.0), ("0.001", 0.0)])
def test_goodput_follows_the_slos(tmp_path: Path, slo_ms: str, expected: float) -> None:
    run = bench(tmp_path, *SMALL, "--slo-ttft-ms", slo_ms, "--slo-tpot-ms", "10000")
    assert run.report is not None
    assert run.report["points"][0]["goodput"] == expected
    assert run.report["plan"]["slo_ttft_ms"] == float(slo_ms)


def test_open_loop_and_the_completions_api(tmp_path: Path) -> None:
    run = bench(tmp_path, *SMALL, "--rate", "200", "--api", "completions")
    assert run.code == cli.EXIT_OK, run.out
    assert run.report is not None
    assert run.report["points"][0]["rate_per_s"] == 200.0
    assert run.report["endpoint"]["api"] == "completions"
    assert all("prompt" in r for r in run.server.requests if r["path"].endswith("/completions"))


def test_a_workload_file_of_several_prompts(tmp_path: Path) -> None:
    shared = "You are a terse assistant. " * 4
    prompts = [
        [{"role": "system", "content": shared}, {"role": "user", "content": q}] for q in "ab"
    ]
    prompt_file = tmp_path / "prompts.json"
    prompt_file.write_text(json.dumps(prompts))
    run = bench(tmp_path, *SMALL, "--prompt-file", str(prompt_file))
    assert run.code == cli.EXIT_OK, run.out
    assert run.report is not None
    assert run.report["plan"]["workload_prompts"] == 2
    assert run.report["plan"]["shared_prefix_chars"] >= len(shared)
    requests = run.server.requests
    users = {r["messages"][1]["content"].split("\n")[0] for r in requests if "messages" in r}
    assert users == {"a", "b"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--base-url", "http://127.0.0.1:1/v1"],
        ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--extra-body", "[1"],
        ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--extra-body", "[1]"],
        ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--concurrency", "0"],
        ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--api-key-env", "PW_UNSET_VAR"],
        ["--base-url", "ftp://127.0.0.1/v1", "--model", "m"],
        ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--header", "no colon"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    assert capsys.readouterr().err


def test_an_unreachable_endpoint_exits_4(fresh_server: FaultServer, tmp_path: Path) -> None:
    fresh_server.stop()
    run = run_cli(fresh_server, tmp_path, *SMALL)
    assert run.code == cli.EXIT_UNREACHABLE
    assert "cannot reach" in run.err


def test_an_endpoint_where_nothing_succeeds_exits_4(tmp_path: Path) -> None:
    run = bench(tmp_path, *SMALL, model="status:500")
    assert run.code == cli.EXIT_UNREACHABLE
    assert "HTTP 500" in run.err
    assert len(run.server.requests) <= 3  # the check, the output-control probe, one calibration


def test_the_guard_refuses_loopback_with_exit_5_and_no_connection(tmp_path: Path) -> None:
    with FaultServer() as server:
        socket.create_connection(("127.0.0.1", server.port)).close()
        assert wait_for(lambda: server.connections == 1)  # the listener counts connections
        run = run_cli(server, tmp_path, *SMALL, "--guard")
        threading.Event().wait(0.1)
        assert run.code == cli.EXIT_REFUSED
        assert "address policy" in run.err
        assert server.connections == 1


def test_too_few_samples_make_the_run_invalid_with_exit_3(tmp_path: Path) -> None:
    run = bench(tmp_path, "--prompt-tokens", "64", "--concurrency", "1", "--requests", "3")
    assert run.code == cli.EXIT_INVALID_RUN
    assert run.report is not None
    assert run.report["valid"] is False
    assert [w["code"] for w in run.report["warnings"]] == ["too_few_samples"]
    assert WARNING_CODES["too_few_samples"][0] is True
    assert "INVALID" in run.out


def test_run_bench_from_a_config_object_with_progress_and_hooks() -> None:
    seen: list[tuple[int, int]] = []

    def hook(report: dict[str, Any], records: list[RequestRecord]) -> None:
        report["diagnosis"] = {"records": len(records)}

    with FaultServer() as server:
        config = BenchConfig(
            endpoint=EndpointConfig(base_url=server.base_url, model="ok"),
            plan=Plan(
                prompt_tokens=(64,), output_tokens=(2,), concurrency=(2,), requests_per_point=10
            ),
        )
        report, records = run_bench(
            config, progress=lambda done, total: seen.append((done, total)), hooks=[hook]
        )
    assert report["diagnosis"] == {"records": len(records)}
    assert len([r for r in records if r.purpose == "sweep" and not r.warmup]) == 10
    assert [done for done, _ in seen] == list(range(1, len(records) + 1))
    assert all(done <= total for done, total in seen)


def test_a_cancelled_run_is_reported_invalid() -> None:
    cancel = threading.Event()
    with FaultServer(token_delay_s=0.05) as server:
        config = BenchConfig(
            endpoint=EndpointConfig(base_url=server.base_url, model="ok"),
            plan=Plan(
                prompt_tokens=(64,), output_tokens=(20,), concurrency=(2,), requests_per_point=50
            ),
        )
        threading.Timer(0.5, cancel.set).start()
        report, records = run_bench(config, cancel=cancel)
    assert report["valid"] is False
    assert "cancelled" in {w["code"] for w in report["warnings"]}
    assert "cancelled" in {r.error_code for r in records}


class _Extension:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--objective", default="latency")

    def check_arguments(self, args: argparse.Namespace) -> None:
        if args.objective == "refuse":
            raise HarnessError("usage", "objective refused")

    def summary_lines(self, report: dict[str, Any]) -> list[str]:
        return [f"extension says: {len(report['points'])} points"]

    def extend_report(
        self, args: argparse.Namespace, report: dict[str, Any], records: list[RequestRecord]
    ) -> None:
        report["recommendations"] = [{"objective": args.objective, "records": len(records)}]


def test_the_cli_takes_an_extension(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    with FaultServer() as server:
        argv = ["--base-url", server.base_url, "--model", "ok", *SMALL, "--objective", "cost"]
        args = cli.build_parser([_Extension()]).parse_args([*argv, "--json", str(path)])
        code = cli.run_from_args(
            args, out=io.StringIO(), err=io.StringIO(), extensions=[_Extension()]
        )
    report = json.loads(path.read_text())
    assert_valid_or_client_noise(code, report)
    assert report["recommendations"][0]["objective"] == "cost"
    assert undocumented_fields(report) == []  # a reserved block


def test_an_extension_refuses_its_arguments_before_any_request() -> None:
    with FaultServer() as server:
        argv = ["--base-url", server.base_url, "--model", "ok", *SMALL, "--objective", "refuse"]
        args = cli.build_parser([_Extension()]).parse_args(argv)
        err = io.StringIO()
        code = cli.run_from_args(args, out=io.StringIO(), err=err, extensions=[_Extension()])
        assert code == cli.EXIT_USAGE
        assert "objective refused" in err.getvalue()
        assert server.requests == []


def test_an_extensions_summary_follows_the_table() -> None:
    with FaultServer() as server:
        argv = ["--base-url", server.base_url, "--model", "ok", *SMALL]
        args = cli.build_parser([_Extension()]).parse_args(argv)
        out = io.StringIO()
        cli.run_from_args(args, out=out, err=io.StringIO(), extensions=[_Extension()])
    text = out.getvalue()
    assert text.index("extension says:") > text.index("ttft p50")


def test_manage_py_bench_exits_with_the_harness_code(tmp_path: Path) -> None:
    from django.core.management import call_command

    path = tmp_path / "r.json"
    with FaultServer() as server, pytest.raises(SystemExit) as caught:
        call_command(
            "bench", "--base-url", server.base_url, "--model", "ok", *SMALL, "--json", str(path)
        )
    assert isinstance(caught.value.code, int)
    assert_valid_or_client_noise(caught.value.code, json.loads(path.read_text()))


def test_manage_py_bench_usage_error_exits_2() -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):  # call_command reports argparse errors this way
        call_command("bench", "--model", "m")
    with pytest.raises(SystemExit) as caught:
        call_command(
            "bench", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--extra-body", "x"
        )
    assert caught.value.code == cli.EXIT_USAGE


def test_output_controls_are_dropped_when_the_endpoint_refuses_them(tmp_path: Path) -> None:
    run = bench(tmp_path, *SMALL, model="strict")
    assert run.code == cli.EXIT_OK, run.out
    assert run.report is not None
    assert run.report["plan"]["output_controls"] == ["max_tokens"]
    assert run.report["points"][0]["errors"] == {}


def test_header_values_may_name_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PW_TEST_KEY", "sk-from-env")
    argv = [
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--model",
        "m",
        "--header",
        "api-key: ${PW_TEST_KEY}",
    ]
    config = cli.config_from_args(cli.build_parser().parse_args(argv))
    assert config.endpoint.headers == (("api-key", "sk-from-env"),)
    assert "sk-from-env" not in repr(config)
    assert config.plan.requests_per_point == 20  # the default plan's
    assert config.plan.warmup_per_point is None  # one per concurrency slot
