"""`python manage.py simulate ...`: the simulator's own command line (`python -m simulator`)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run the built-in OpenAI-compatible LLM serving simulator (see --help)."
    # The simulator needs no database: never block on checks or migrations.
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("simulator_args", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # Pass everything after `simulate` to the simulator untouched, --help included.
        from simulator.cli import main

        exit_code = main(argv[2:])
        if exit_code:
            raise CommandError(
                f"the simulator exited with status {exit_code}", returncode=exit_code
            )

    def handle(self, *args: Any, **options: Any) -> None:
        # Reached through call_command(), which skips run_from_argv.
        from simulator.cli import main

        main(options["simulator_args"])
