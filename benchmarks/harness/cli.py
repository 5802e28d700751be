"""The `bench` command line: arguments, exit codes, the readable table and the JSON report.

`python -m benchmarks.harness.cli` and `python manage.py bench` share `add_arguments` and
`run_from_args`. The advisor extends both through `EXTENSIONS` (see `CliExtension`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

from benchmarks.harness.config import EndpointConfig
from benchmarks.harness.connector import parse_base_url
from benchmarks.harness.errors import HarnessError
from benchmarks.harness.plan import DEFAULT_PLAN, Plan, Workload, load_workload
from benchmarks.harness.policy import AddressPolicy, AllowAll, guard_policy
from benchmarks.harness.records import RequestRecord
from benchmarks.harness.sweep import BenchConfig, ProgressFn, request_budget, run_bench

EXIT_OK = 0
EXIT_BUDGET_BROKEN = 1  # reserved for the CI gate
EXIT_USAGE = 2
EXIT_INVALID_RUN = 3
EXIT_UNREACHABLE = 4  # endpoint unreachable, or no request succeeded
EXIT_REFUSED = 5  # refused by the address policy

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


class CliExtension(Protocol):
    """A plug-in for the command line: more arguments, and more blocks in the report."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def check_arguments(self, args: argparse.Namespace) -> None:
        """Raise `HarnessError("usage", ...)` for bad arguments, before any request is sent."""

    def extend_report(
        self, args: argparse.Namespace, report: dict[str, Any], records: list[RequestRecord]
    ) -> None: ...

    def summary_lines(self, report: dict[str, Any]) -> list[str]:
        """Plain words printed under the table."""
        ...


# The advisor appends its extension here (flags such as --workload-*, and the report blocks
# `latency_model`, `diagnosis`, `recommendations`).
EXTENSIONS: list[CliExtension] = []


def add_arguments(
    parser: argparse.ArgumentParser, extensions: Sequence[CliExtension] | None = None
) -> None:
    """The bench arguments; defaults not given here come from `plan.DEFAULT_PLAN`."""
    plan = DEFAULT_PLAN
    add = parser.add_argument
    add("--base-url", required=True, help="API base URL, e.g. http://127.0.0.1:8000/v1")
    add("--model", required=True, help="model name sent in each request")
    add("--api", choices=("chat", "completions"), default="chat", help="default: chat")
    add("--api-key-env", metavar="VAR", help="environment variable holding the API key (Bearer)")
    add(
        "--header",
        action="append",
        default=[],
        metavar="'K: V'",
        help="extra header, repeatable; ${VAR} in the value is read from the environment",
    )
    add("--extra-body", metavar="JSON", help="extra body parameters, e.g. '{\"ignore_eos\": true}'")
    add("--prompt-file", metavar="PATH", help="a text file, or a JSON list of message lists")
    add("--prompt-tokens", type=_int_list, help=f"default: {_csv(plan.prompt_tokens)}")
    add("--output-tokens", type=_int_list, help=f"default: {_csv(plan.output_tokens)}")
    add("--concurrency", type=_int_list, help=f"default: {_csv(plan.concurrency)}")
    add(
        "--requests",
        type=_positive_int,
        metavar="N",
        help=f"measured requests per point, warm-up excluded (default: {plan.requests_per_point})",
    )
    add("--warmup", type=_non_negative_int, metavar="K", help="default: one per concurrency slot")
    add("--rate", type=_positive_float, metavar="R", help="open loop at R requests/s per point")
    add("--cache-probe", action="store_true", help="also probe the server's prompt cache")
    add("--slo-ttft-ms", type=_positive_float, metavar="X", help="TTFT SLO for goodput")
    add("--slo-tpot-ms", type=_positive_float, metavar="Y", help="TPOT SLO for goodput")
    add("--guard", action="store_true", help="refuse loopback, private and other local addresses")
    add("--json", metavar="PATH", help="write the JSON report here")
    for extension in EXTENSIONS if extensions is None else extensions:
        extension.add_arguments(parser)


def build_parser(extensions: Sequence[CliExtension] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench", description="Measure an OpenAI-compatible endpoint's streaming latency."
    )
    add_arguments(parser, extensions)
    return parser


def config_from_args(
    args: argparse.Namespace, *, policy: AddressPolicy | None = None
) -> BenchConfig:
    """Turn parsed arguments into a `BenchConfig`; raise `HarnessError("usage")` on bad input."""
    headers = [_parse_header(text) for text in args.header]
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise HarnessError("usage", f"environment variable {args.api_key_env} is not set")
    extra_body: dict[str, Any] = {}
    if args.extra_body:
        try:
            extra_body = json.loads(args.extra_body)
        except ValueError as exc:
            raise HarnessError("usage", f"--extra-body is not JSON: {exc}") from exc
        if not isinstance(extra_body, dict):
            raise HarnessError("usage", "--extra-body must be a JSON object")
    endpoint = EndpointConfig(
        base_url=args.base_url,
        model=args.model,
        api=args.api,
        api_key=api_key,
        headers=tuple(headers),
        extra_body=extra_body,
    )
    parse_base_url(endpoint.base_url)  # a bad URL is a usage error, before anything is sent
    workload = Workload()
    if args.prompt_file:
        try:
            workload = load_workload(args.prompt_file)
        except (OSError, ValueError) as exc:
            raise HarnessError("usage", f"cannot read --prompt-file: {exc}") from exc
    if policy is None:
        policy = guard_policy() if args.guard else AllowAll()
    return BenchConfig(
        endpoint=endpoint, plan=plan_from_args(args), workload=workload, policy=policy
    )


def plan_from_args(args: argparse.Namespace) -> Plan:
    plan = DEFAULT_PLAN
    return Plan(
        prompt_tokens=tuple(args.prompt_tokens or plan.prompt_tokens),
        output_tokens=tuple(args.output_tokens or plan.output_tokens),
        concurrency=tuple(args.concurrency or plan.concurrency),
        requests_per_point=args.requests or plan.requests_per_point,
        warmup_per_point=args.warmup if args.warmup is not None else plan.warmup_per_point,
        rate_per_s=args.rate,
        cache_probe=args.cache_probe,
        slo_ttft_ms=args.slo_ttft_ms,
        slo_tpot_ms=args.slo_tpot_ms,
    )


def run_from_args(
    args: argparse.Namespace,
    *,
    out: TextIO,
    err: TextIO,
    extensions: Sequence[CliExtension] | None = None,
) -> int:
    """Run the bench the arguments describe, print it, write the JSON; return the exit code."""
    chosen = EXTENSIONS if extensions is None else extensions
    try:
        config = config_from_args(args)
        for extension in chosen:
            extension.check_arguments(args)
    except HarnessError as exc:
        err.write(f"bench: {exc.message}\n")
        return EXIT_USAGE
    budget = request_budget(config)
    out.write(
        f"Sending at most {budget.total} requests to {config.endpoint.base_url}: "
        f"{budget.check} connection check, {budget.calibration} calibration, "
        f"{budget.warmup} warm-up, {budget.measured} measured, {budget.probe} cache probe.\n"
    )
    try:
        report, records = run_bench(config, progress=_progress_line(err) if err.isatty() else None)
    except HarnessError as exc:
        err.write(f"bench: {exc.message}\n")
        return {"usage": EXIT_USAGE, "blocked_by_policy": EXIT_REFUSED}.get(
            exc.code, EXIT_UNREACHABLE
        )
    if err.isatty():
        err.write("\n")
    for extension in chosen:
        extension.extend_report(args, report, records)
    out.write(render_table(report))
    for extension in chosen:
        out.writelines(f"{line}\n" for line in extension.summary_lines(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        out.write(f"Report written to {args.json}\n")
    return exit_code(report, records)


def _progress_line(err: TextIO) -> ProgressFn:
    def show(done: int, total: int) -> None:
        err.write(f"\r{done} of at most {total} requests")

    return show


def exit_code(report: dict[str, Any], records: Sequence[RequestRecord]) -> int:
    if not any(record.outcome == "success" for record in records if record.purpose == "sweep"):
        refused = any(record.error_code == "blocked_by_policy" for record in records)
        return EXIT_REFUSED if refused else EXIT_UNREACHABLE
    return EXIT_OK if report["valid"] else EXIT_INVALID_RUN


_COLUMNS = (
    ("prompt", 7),
    ("output", 6),
    ("conc", 5),
    ("ok/n", 8),
    ("ttft p50", 9),
    ("ttft p90", 9),
    ("tpot p50", 9),
    ("itl p50", 8),
    ("e2e p50", 9),
    ("tok/s", 9),
    ("goodput", 7),
)


def render_table(report: dict[str, Any]) -> str:
    """The points as a fixed-width table (times in ms), then warnings and the cache probe."""
    lines = ["  ".join(title.rjust(width) for title, width in _COLUMNS)]
    for point in report["points"]:
        cells = (
            point["target_prompt_tokens"],
            point["target_output_tokens"],
            point["concurrency"],
            f"{point['succeeded']}/{point['requests']}",
            _stat(point["ttft_ms"], "p50"),
            _stat(point["ttft_ms"], "p90"),
            _stat(point["tpot_ms"], "p50"),
            _stat(point["itl_ms"], "p50"),
            _stat(point["e2e_ms"], "p50"),
            _number(point["output_tokens_per_s"]),
            _number(point["goodput"]),
        )
        lines.append(
            "  ".join(str(cell).rjust(w) for cell, (_, w) in zip(cells, _COLUMNS, strict=True))
        )
    for item in report["warnings"]:
        where = "" if item["point"] is None else f" (point {item['point']})"
        lines.append(f"warning {item['code']}{where}: {item['message']}")
    probe = report["cache_probe"]
    if probe is not None:
        lines.append(
            f"cache probe: cold {_number(probe['cold_ttft_ms'])} ms, warm "
            f"{_number(probe['warm_ttft_ms'])} ms, shared prefix "
            f"{_number(probe['shared_prefix_ttft_ms'])} ms; server caches: "
            f"{probe['server_caches']} ({probe['evidence']})"
        )
    lines.append(
        "valid run" if report["valid"] else "INVALID run: the client may have set these numbers"
    )
    return "\n".join(lines) + "\n"


def _stat(statistics: dict[str, Any] | None, key: str) -> str:
    return "-" if statistics is None else _number(statistics[key])


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def _csv(values: Sequence[int]) -> str:
    return ",".join(str(value) for value in values)


def _parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _HEADER_NAME.match(name) or "\r" in value or "\n" in value:
        raise HarnessError("usage", f"--header must look like 'Name: value', got {text!r}")

    def expand(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in os.environ:
            raise HarnessError("usage", f"--header refers to unset variable {variable}")
        return os.environ[variable]

    return name, _ENV_REFERENCE.sub(expand, value)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas: {text!r}"
        ) from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return values


def _non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number: {text!r}")
    return int(text)


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number: {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a number: {text!r}") from exc
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number: {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv`, run, and return the exit code (2 for a usage error, as argparse does)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 for --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return run_from_args(args, out=sys.stdout, err=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
