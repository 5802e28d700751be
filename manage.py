#!/usr/bin/env python
"""Django's command-line utility."""

from __future__ import annotations

import os
import sys

# Commands that need neither the database nor any secret run on a fresh clone as they are.
DJANGO_FREE_COMMANDS = {"bench", "simulate"}


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    tools = command in DJANGO_FREE_COMMANDS
    os.environ.setdefault(
        "DJANGO_SETTINGS_MODULE", "config.settings.tools" if tools else "config.settings.base"
    )
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
