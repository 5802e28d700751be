"""The command line: `python -m simulator` and `python manage.py simulate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from simulator.profile import PRESETS

ROOT = Path(__file__).resolve().parents[2]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """Start `python -m simulator ARGS --port 0`; yields the printed base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", *args, "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("Simulator serving"), line
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_it_lists_presets_one_a_line_name_first() -> None:
    result = run(sys.executable, "-m", "simulator", "--list-presets")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(PRESETS)
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


def test_it_serves_every_preset_by_default_on_the_printed_port() -> None:
    with serving() as base_url:
        models = httpx.get(f"{base_url}/models").json()["data"]
    assert [model["id"] for model in models] == list(PRESETS)


def test_it_serves_a_custom_profile_file(tmp_path: Path) -> None:
    profile = {"name": "my-h200", "base": "llama-8b-h100", "hardware": "h200", "max_batch_size": 8}
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    with serving("--profile", str(path)) as base_url:
        models = httpx.get(f"{base_url}/models").json()["data"]
    assert [model["id"] for model in models] == ["my-h200"]


def test_it_rejects_an_unknown_preset_with_a_clear_message() -> None:
    result = run(sys.executable, "-m", "simulator", "--preset", "gpt-9-tpu")
    assert result.returncode == 2
    assert "unknown preset 'gpt-9-tpu'" in result.stderr


def test_it_runs_through_manage_py_without_a_database() -> None:
    env = {**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
    result = subprocess.run(
        [sys.executable, "manage.py", "simulate", "--list-presets"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == next(iter(PRESETS))
