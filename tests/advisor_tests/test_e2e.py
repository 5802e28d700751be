"""End to end: the harness's client measures the independent server, the advisor explains it.

One server per bottleneck, with physics the advisor did not write; each test checks the verdict,
the breakdown against the server's known parameters and the top lever.
"""

from __future__ import annotations

import pytest

from advisor.core.advise import advise
from advisor.core.workload import Workload
from tests.advisor_tests.indie_server import ServerParams, running
from tests.advisor_tests.measure import SweepPlan, cache_probe, sweep

CASES = {
    # prefill 0.03 ms/token: 2048 tokens take 61 ms; decode 15 x 1 ms.
    "prefill": (
        ServerParams(overhead_ms=2, prefill_ms_per_token=0.03, tpot_ms=1.0),
        Workload(prompt_tokens=2048, output_tokens=16, concurrency=1),
        "shorter_prompt",
    ),
    # decode 23 x 3 ms = 69 ms against 1 ms of prefill.
    "decode": (
        ServerParams(overhead_ms=2, prefill_ms_per_token=0.002, tpot_ms=3.0, batch_slope=0.01),
        Workload(prompt_tokens=512, output_tokens=24, concurrency=1),
        "quantization",
    ),
    # 2 slots for 8 clients: each waits about three services of ~30 ms.
    "queueing": (
        ServerParams(overhead_ms=2, prefill_ms_per_token=0.002, tpot_ms=2.0, slots=2),
        Workload(prompt_tokens=512, output_tokens=16, concurrency=8),
        "scale_out",
    ),
    # 40 ms before anything happens; 15 x 1 ms of decode.
    "overhead": (
        ServerParams(overhead_ms=40, prefill_ms_per_token=0.002, tpot_ms=1.0),
        Workload(prompt_tokens=512, output_tokens=16, concurrency=1),
        "reduce_overhead",
    ),
}


def _expected_parts(params: ServerParams, workload: Workload) -> dict[str, float]:
    prompt_tokens = workload.prompt_tokens or 0
    output_tokens = workload.output_tokens or 0
    return {
        "overhead": params.overhead_ms,
        "prefill": params.prefill_ms(prompt_tokens),
        "decode": (output_tokens - 1) * params.step_ms(1, prompt_tokens),
    }


@pytest.mark.parametrize("bottleneck", list(CASES))
def test_it_explains_a_server_whose_physics_it_did_not_write(bottleneck):
    params, workload, top_lever = CASES[bottleneck]
    concurrency = workload.concurrency or 1
    concurrencies = (1, concurrency) if concurrency != 1 else (1, 4)
    plan = SweepPlan(
        prompt_lengths=(64, 512, 2048),
        concurrencies=concurrencies,
        output_tokens=workload.output_tokens or 16,
        # With a queue, enough requests per client for it to reach its steady state: the
        # first wave starts together and waits less (0, 0, S, S, 2S, ...) than later ones.
        requests=8 if concurrency == 1 else 5 * concurrency,
    )
    with running(params) as base_url:
        records = sweep(base_url, plan)
    result = advise(records, workload=workload, resamples=100)
    blocks = result.to_report_blocks()
    diagnosis = blocks["diagnosis"]
    assert diagnosis["bottleneck"] == bottleneck, result.summary_lines()
    assert blocks["recommendations"][0]["lever"] == top_lever
    parts = diagnosis["breakdown_ms"]
    expected = _expected_parts(params, workload)
    # The client and the loopback add about a millisecond to the server's own overhead.
    assert parts["overhead"] == pytest.approx(expected["overhead"], abs=3.0)
    assert parts["prefill"] == pytest.approx(expected["prefill"], rel=0.15, abs=2.0)
    if concurrency == 1:
        assert parts["decode"] == pytest.approx(expected["decode"], rel=0.1)
        assert parts["queueing"] == 0.0
    else:
        # Closed loop, c clients, s slots: a cycle is c / s services, the wait the rest.
        service_ms = expected["prefill"] + expected["decode"]
        expected_queue_ms = (concurrency / params.slots - 1) * service_ms
        assert parts["queueing"] == pytest.approx(expected_queue_ms, rel=0.2)


def test_a_caching_server_has_prompt_caching_already_applied():
    params = ServerParams(overhead_ms=2, prefill_ms_per_token=0.03, tpot_ms=1.0, prefix_cache=True)
    workload = Workload(prompt_tokens=2048, output_tokens=16, shared_prefix_tokens=1536)
    with running(params) as base_url:
        records = sweep(base_url, SweepPlan(concurrencies=(1,), requests=6))
        probe = cache_probe(base_url, 1024)
    assert probe.server_caches is True
    blocks = advise(records, workload=workload, cache_probe=probe, resamples=50).to_report_blocks()
    assert "prompt_caching" not in {r["lever"] for r in blocks["recommendations"]}
    applied = blocks["diagnosis"]["already_applied"]
    assert [a["lever"] for a in applied] == ["prompt_caching"]
    assert applied[0]["measured_saving_ms"] == pytest.approx(params.prefill_ms(1024), rel=0.2)
    assert applied[0]["expected_saving_ms"] == pytest.approx(params.prefill_ms(1536), rel=0.15)
