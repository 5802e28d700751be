"""The advisor on `manage.py bench`: workload flags, three report blocks, a verdict in words.

Django-free glue between the harness command line (`benchmarks.harness.cli.CliExtension`) and
the advisor core; the core itself never imports the harness.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from advisor.core.advise import advise
from advisor.core.limits import DeclaredError, resolve_declared
from advisor.core.render import summary_lines
from advisor.core.samples import Declared, Slo
from advisor.core.workload import OBJECTIVES, SERVINGS, Workload, WorkloadError
from benchmarks.harness.errors import HarnessError
from benchmarks.harness.plan import load_workload
from benchmarks.harness.records import RequestRecord


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number: {text!r}")
    return int(text)


class AdvisorExtension:
    """Adds the workload flags, the `latency_model`/`diagnosis`/`recommendations` blocks and
    the plain-words verdict to `bench`."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("advisor (the workload the verdict is for)")
        add = group.add_argument
        add(
            "--workload-prompt-tokens",
            type=_positive_int,
            metavar="P",
            help="typical prompt length (default: median of --prompt-file prompts, else the "
            "middle swept prompt length)",
        )
        add(
            "--workload-output-tokens",
            type=_positive_int,
            metavar="N",
            help="typical output length (default: the plan's output length)",
        )
        add(
            "--workload-concurrency",
            type=_positive_int,
            metavar="C",
            help="requests in flight in production (default: 1)",
        )
        add("--objective", choices=OBJECTIVES, default="latency", help="default: latency")
        add("--serving", choices=SERVINGS, default="self_hosted", help="default: self_hosted")
        add("--hardware", metavar="H", help="declared accelerator, e.g. h100-sxm (for a roofline)")
        add("--declared-model", metavar="M", help="declared model, e.g. llama-3.1-8b")
        add("--dtype", metavar="D", help="declared weight dtype: bf16, fp8 or int4")
        add(
            "--devices",
            type=_positive_int,
            default=1,
            metavar="N",
            help="devices the declared model is split over (tensor parallel; default: 1)",
        )

    def check_arguments(self, args: argparse.Namespace) -> None:
        declared = _declared(args)
        given = [name for name in ("hardware", "model", "dtype") if getattr(declared, name)]
        if given and len(given) < 3:
            raise HarnessError(
                "usage",
                "--hardware, --declared-model and --dtype go together (a roofline needs all three)",
            )
        try:
            resolve_declared(declared)
            _workload(args, report=None)
        except (DeclaredError, WorkloadError) as error:
            raise HarnessError("usage", str(error)) from None

    def extend_report(
        self, args: argparse.Namespace, report: dict[str, Any], records: list[RequestRecord]
    ) -> None:
        result = advise(
            records,
            run_valid=bool(report["valid"]),
            cache_probe=report.get("cache_probe"),
            workload=_workload(args, report=report),
            slo=Slo(ttft_ms=args.slo_ttft_ms, tpot_ms=args.slo_tpot_ms),
            declared=_declared(args),
            seed=int(report["plan"].get("seed", 0)),
        )
        report.update(result.to_report_blocks())

    def summary_lines(self, report: dict[str, Any]) -> list[str]:
        if "diagnosis" not in report:
            return []
        lines = ["", *summary_lines(report)]
        if report.get("plan", {}).get("rate_per_s") is not None:
            lines.append(OPEN_LOOP_CAVEAT)
        return lines


OPEN_LOOP_CAVEAT = (
    "Note: this was an open-loop run (--rate). The advisor models closed loops (each client "
    "waits for its answer before the next request): read its queueing and savings above "
    "concurrency 1 as approximate."
)


def _declared(args: argparse.Namespace) -> Declared:
    return Declared(
        hardware=args.hardware, model=args.declared_model, dtype=args.dtype, devices=args.devices
    )


def _workload(args: argparse.Namespace, *, report: dict[str, Any] | None) -> Workload:
    """The workload from the flags; unset prompt tokens default to the prompt file's median."""
    prompt_tokens = args.workload_prompt_tokens
    shared_prefix_tokens = 0
    if report is not None and args.prompt_file:
        calibration = report["plan"].get("calibration") or {}
        measured = [int(n) for n in calibration.get("base_prompt_tokens") or [] if n]
        if measured and prompt_tokens is None:
            prompt_tokens = round(statistics.median(measured))
        shared_prefix_tokens = _shared_prefix_tokens(args.prompt_file, report, measured)
    return Workload(
        prompt_tokens=prompt_tokens,
        output_tokens=args.workload_output_tokens,
        concurrency=args.workload_concurrency,
        shared_prefix_tokens=shared_prefix_tokens,
        objective=args.objective,
        serving=args.serving,
    )


def _shared_prefix_tokens(path: str, report: dict[str, Any], measured: list[int]) -> int:
    """The prompts' common prefix in tokens, at the measured tokens-per-character of the file."""
    shared_chars = int(report["plan"].get("shared_prefix_chars") or 0)
    if not shared_chars or not measured:
        return 0
    workload = load_workload(path)
    chars = [sum(len(m["content"]) for m in prompt) for prompt in workload.sweep_prompts]
    tokens_per_char = statistics.median(measured) / max(1, statistics.median(chars))
    return round(shared_chars * tokens_per_char)
