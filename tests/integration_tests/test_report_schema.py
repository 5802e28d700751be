"""docs/report-schema.md is generated from the metric definitions of the harness and advisor."""

from __future__ import annotations

from advisor.report_schema import ADVISOR_SECTIONS, render_full_report_schema
from benchmarks.harness.metrics import SCHEMA_DOC_PATH, undocumented_fields


def test_the_committed_schema_page_is_the_rendered_one() -> None:
    committed = SCHEMA_DOC_PATH.read_text(encoding="utf-8")
    assert committed == render_full_report_schema(), (
        "docs/report-schema.md is stale: run `python -m advisor.report_schema --write`"
    )


def test_an_undocumented_advisor_field_is_caught() -> None:
    report = {"diagnosis": {"bottleneck": "decode", "mood": "grumpy"}, "recommendations": []}
    assert undocumented_fields(report, ADVISOR_SECTIONS) == ["diagnosis.mood"]
