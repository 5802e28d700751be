"""The README's configuration table lists every variable the settings read."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = re.compile(r"""(?:env_\w+|os\.environ\.get|os\.environ\.setdefault)\(\s*["']([A-Z_]+)["']""")


def test_every_setting_variable_is_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    table = {m.group(1) for m in re.finditer(r"^\| `([A-Z_]+)` \|", readme, re.MULTILINE)}
    read = set()
    for path in (ROOT / "config" / "settings").glob("*.py"):
        read |= set(READ.findall(path.read_text()))
    internal = {"PHASEWISE_TEST_RUN_ID", "PHASEWISE_TEST_DB_NAME", "PHASEWISE_TEST_FALLBACK_SAID"}
    assert read - internal, "found no variables: the pattern is broken"
    missing = sorted(read - internal - table)
    assert not missing, f"README configuration table lacks: {missing}"


def test_readme_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    first_heading = re.findall(r"^## (.+)$", readme, re.MULTILINE)[0]
    assert first_heading == "Two commands"
    assert "make run" in readme
    assert "make test" in readme
