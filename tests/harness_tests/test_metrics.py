"""Metric definitions as data: the schema page, the CSV columns and the glossary agree."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchmarks.harness import metrics
from benchmarks.harness.records import RequestRecord

# shared/ lies beside the checkout, on developers' machines and on CI.
GLOSSARY = Path(__file__).resolve().parents[3] / "shared" / "GLOSSARY.md"


def test_extra_sections_are_appended_for_the_advisor() -> None:
    text = metrics.render_report_schema(["### `latency_model`\n\nThe fitted model."])
    assert text.rstrip().endswith("The fitted model.")
    assert "reserved for the advisor" in text


def test_every_record_field_is_a_request_metric() -> None:
    fields = {field.name for field in dataclasses.fields(RequestRecord)}
    derived = {"client_delay_ms", "tpot_ms", "itl_ms"}
    assert set(metrics.request_csv_header()) == fields | derived


def test_a_record_becomes_a_csv_row_in_header_order() -> None:
    record = RequestRecord(4, 128, 64, chunk_offsets_us=[1000, 3000], ttft_ms=1.0)
    row = dict(zip(metrics.request_csv_header(), metrics.request_csv_row(record), strict=True))
    assert row["concurrency"] == "4"
    assert row["chunk_offsets_us"] == "1000 3000"
    assert row["itl_ms"] == "2.0"
    assert row["connect_ms"] == ""


def _glossary_per_request_rows() -> dict[str, str]:
    section = GLOSSARY.read_text(encoding="utf-8").split("## Per request")[1].split("\n## ")[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            rows[cells[0].strip("`").removesuffix("[]")] = cells[1]
    return rows


@pytest.mark.skipif(not GLOSSARY.exists(), reason="the shared glossary is not on this machine")
def test_per_request_definitions_match_the_glossary_word_for_word() -> None:
    rows = _glossary_per_request_rows()
    ours = {metric.name: metric.definition for metric in metrics.REQUEST_METRICS}
    assert len(rows) == 15
    for name, definition in rows.items():
        if name != "error_code":  # ours points to the full table of codes instead
            assert ours[name] == definition, name


def test_every_error_code_in_the_glossary_is_defined() -> None:
    glossary_codes = {
        "connect", "tls", "timeout_connect", "timeout_ttft", "timeout_idle", "timeout_total",
        "http_401", "http_429", "http_4xx", "http_5xx", "protocol", "too_large", "disconnected",
        "blocked_by_policy", "cancelled",
    }  # fmt: skip
    assert glossary_codes <= set(metrics.ERROR_CODES)


def test_only_client_side_warnings_invalidate_a_run() -> None:
    invalidating = {code for code, (invalid, _) in metrics.WARNING_CODES.items() if invalid}
    assert invalidating == {
        "client_saturated", "loop_lag", "client_delay", "too_few_samples", "cancelled"
    }  # fmt: skip
