"""Inputs: harness records convert, non-sweep and warm-up requests are left out, probes parse."""

from __future__ import annotations

import pytest

from advisor.core.fit import build_table
from advisor.core.samples import cache_probe_from_report, samples_from_records
from advisor.core.workload import Workload, WorkloadError, typical_request
from benchmarks.harness.records import RequestRecord


def _record(**changes: object) -> RequestRecord:
    fields: dict[str, object] = {
        "concurrency": 1,
        "target_prompt_tokens": 512,
        "target_output_tokens": 16,
        "ttft_ms": 30.0,
        "e2e_ms": 90.0,
        "output_tokens": 16,
        "prompt_tokens": 520,
        "cached_prompt_tokens": 8,
        "outcome": "success",
    }
    fields.update(changes)
    return RequestRecord(**fields)  # type: ignore[arg-type]


def test_harness_records_convert_with_their_derived_tpot():
    (sample,) = samples_from_records([_record()])
    assert sample.tpot_ms == pytest.approx(4.0)
    assert sample.prompt_tokens == 520
    assert sample.usable


def test_probe_and_calibration_requests_are_not_sweep_samples():
    records = [_record(), _record(purpose="probe"), _record(purpose="calibration")]
    assert len(samples_from_records(records)) == 1


def test_only_measured_successes_enter_the_fit_and_cached_tokens_are_not_prefilled():
    records = [
        _record(),
        _record(warmup=True),
        _record(outcome="error", ttft_ms=None, e2e_ms=None),
        _record(outcome="incomplete"),
    ]
    table = build_table(samples_from_records(records))
    assert table.ttft_ms.size == 1
    assert table.uncached_prompt_tokens[0] == 512


@pytest.mark.parametrize(
    "block",
    [
        {"server_caches": True, "cold_ttft_ms": 120.0, "warm_ttft_ms": 20.0},
        {"server_caches": True, "cold": {"ttft_ms": 120.0}, "warm": {"ttft_ms": 20.0}},
        {
            "server_caches": True,
            "cold_ttft_ms": 120.0,
            "warm_ttft_ms": 20.0,
            "shared_prefix_ttft_ms": 25.0,
            "prompt_tokens": 1023.5,
            "warm_cached_prompt_tokens": 1008.0,
            "evidence": "the server reported 1008 cached prompt tokens on a warm repeat",
        },
    ],
)
def test_the_cache_probe_block_parses_flat_or_nested(block):
    probe = cache_probe_from_report(block)
    assert probe is not None
    assert probe.server_caches is True
    assert probe.measured_saving_ms == pytest.approx(100.0)
    assert cache_probe_from_report(None) is None
    unknown = cache_probe_from_report({"server_caches": None})
    assert unknown is not None
    assert unknown.server_caches is None
    assert unknown.measured_saving_ms is None


def test_the_typical_request_defaults_to_the_middle_swept_length_and_concurrency_one():
    records = [
        _record(target_prompt_tokens=p, prompt_tokens=p + 5, output_tokens=n)
        for p in (128, 1024, 4096)
        for n in (60, 64, 70)
    ]
    request = typical_request(Workload(), samples_from_records(records))
    assert (request.prompt_tokens, request.output_tokens, request.concurrency) == (1029, 64, 1)
    with pytest.raises(WorkloadError, match="no successful request"):
        typical_request(Workload(), [])
    assert Workload.from_prompts([100, 300, 200], shared_prefix_tokens=50).prompt_tokens == 200
