"""The harness runs from a plain script: no Django import anywhere in it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "harness"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_harness_module_imports_django() -> None:
    modules = sorted(HARNESS.glob("*.py"))
    assert len(modules) > 10
    offenders = {
        path.name: sorted(
            name for name in _imported_modules(path) if name.split(".")[0] == "django"
        )
        for path in modules
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_command_line_runs_without_django_settings() -> None:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    code = (
        "import sys, benchmarks.harness.cli as c, benchmarks.harness.sweep;"
        "assert 'django' not in sys.modules, 'django was imported';"
        "sys.exit(c.main(['--help']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=HARNESS.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--prompt-tokens" in done.stdout
