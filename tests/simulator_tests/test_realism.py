"""docs/simulator.md's realism table is the simulator's own output, within 2x of public figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simulator.profile import PRESETS
from simulator.realism import REALISM_CASES, realism_markdown, simulated_figures

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"
BLOCK = re.compile(r"<!-- realism:start -->\n(.*?)\n<!-- realism:end -->", re.DOTALL)


def test_it_keeps_the_documented_table_equal_to_the_physics() -> None:
    match = BLOCK.search(DOC.read_text())
    assert match is not None, "docs/simulator.md lost its realism markers"
    assert match.group(1) == realism_markdown(), (
        "re-render with simulator.realism.realism_markdown()"
    )


@pytest.mark.parametrize(
    "case", REALISM_CASES, ids=lambda case: f"{case.setup} {case.prompt_tokens}"
)
def test_it_stays_within_2x_of_published_figures(case) -> None:
    figures = simulated_figures(case)
    assert 0.5 <= figures.tpot_ms / case.published_tpot_ms <= 2.0
    if case.published_ttft_ms is not None:
        assert 0.5 <= figures.ttft_ms / case.published_ttft_ms <= 2.0


def test_it_covers_at_least_three_model_and_gpu_pairs() -> None:
    pairs = {(case.profile.model.name, case.profile.hardware.name) for case in REALISM_CASES}
    with_ttft = {
        (case.profile.model.name, case.profile.hardware.name)
        for case in REALISM_CASES
        if case.published_ttft_ms is not None
    }
    assert len(pairs) >= 3
    assert len(with_ttft) >= 2


def test_it_documents_every_preset() -> None:
    text = DOC.read_text()
    assert [name for name in PRESETS if f"`{name}`" not in text] == []
