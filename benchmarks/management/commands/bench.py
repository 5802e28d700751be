"""`manage.py bench`: a thin wrapper over the harness command line (no database, no server)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from advisor.bench import AdvisorExtension
from benchmarks.harness import cli

# The harness measures; the advisor adds its flags, report blocks and verdict.
EXTENSIONS = [AdvisorExtension()]


class Command(BaseCommand):
    help = "Measure an OpenAI-compatible endpoint: TTFT, TPOT, ITL per sweep point."
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_arguments(parser, EXTENSIONS)

    def handle(self, *args: Any, **options: Any) -> None:
        code = cli.run_from_args(
            argparse.Namespace(**options), out=sys.stdout, err=sys.stderr, extensions=EXTENSIONS
        )
        sys.exit(code)  # the exit codes are a public interface (CI pipelines read them)
