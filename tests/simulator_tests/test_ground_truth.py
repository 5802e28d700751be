"""Ground truth: per-request timings in headers, the JSON-lines log and /sim/ground-truth."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
import pytest

from simulator.groundtruth import LagMonitor
from simulator.inprocess import simulator_in_thread

BODY = {
    "model": "llama-8b-h100",
    "messages": [{"role": "user", "content": "Tell me about HBM."}],
    "max_tokens": 20,
    "ignore_eos": True,
}


def test_it_records_every_chunk_write_of_a_stream(tmp_path: Path) -> None:
    log_path = tmp_path / "truth.jsonl"
    with simulator_in_thread(
        presets=["llama-8b-h100"], time_scale=0.05, ground_truth_path=log_path
    ) as sim:
        received_ns: list[int] = []
        with httpx.stream(
            "POST", f"{sim.base_url}/chat/completions", json={**BODY, "stream": True}
        ) as response:
            request_id = response.headers["X-Sim-Request-Id"]
            arrival_ns = int(response.headers["X-Sim-Arrival-Ns"])
            for line in response.iter_lines():
                if '"content":"' in line and '"content":""' not in line:
                    received_ns.append(time.perf_counter_ns())
        record = httpx.get(f"{sim.root_url}/sim/ground-truth/{request_id}").json()
    assert record["arrival_ns"] == arrival_ns
    assert sum(record["chunk_tokens"]) == record["completion_tokens"] == 20
    assert len(record["chunk_write_ns"]) == len(received_ns)
    for written, received in zip(record["chunk_write_ns"], received_ns, strict=True):
        assert 0 <= received - written < 50e6  # the client sees each chunk after its write
    assert record["chunk_offsets_ms"][0] == pytest.approx(
        (record["chunk_write_ns"][0] - arrival_ns) / 1e6
    )
    assert record["queue_ms"] >= 0
    assert record["prefill_ms"] > 0
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [line["request_id"] for line in lines] == [request_id]


def test_it_puts_engine_timings_in_non_streaming_headers() -> None:
    with simulator_in_thread(presets=["qwen-7b-a100-batch4"], time_scale=0.05) as sim:
        response = httpx.post(
            f"{sim.base_url}/chat/completions", json={**BODY, "model": "qwen-7b-a100-batch4"}
        )
        received_ns = time.perf_counter_ns()
        request_id = response.headers["X-Sim-Request-Id"]
        record = httpx.get(f"{sim.root_url}/sim/ground-truth/{request_id}").json()
    (written_ns,) = record["chunk_write_ns"]
    assert 0 <= received_ns - written_ns < 50e6
    assert record["chunk_tokens"] == [20]
    headers = response.headers
    assert float(headers["X-Sim-Prefill-Ms"]) > 0
    assert float(headers["X-Sim-Queue-Ms"]) >= 0
    first_ms = float(headers["X-Sim-First-Token-Offset-Ms"])
    last_ms = float(headers["X-Sim-Last-Token-Offset-Ms"])
    assert 0 < first_ms < last_ms
    assert headers["X-Sim-Completion-Tokens"] == "20"


def test_it_logs_falling_behind_when_a_seconds_p99_lag_passes_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    monitor = LagMonitor(limit_ms=10.0)
    with caplog.at_level(logging.WARNING, logger="simulator"):
        for _ in range(1000):
            monitor.record(0.5)
        monitor.tick()
        assert "falling_behind" not in caplog.text
        for lag_ms in [0.5] * 950 + [25.0] * 50:
            monitor.record(lag_ms)
        monitor.tick()
    assert "falling_behind p99_ms=25.00" in caplog.text
    assert monitor.summary()["falling_behind_seconds"] == 1
    assert monitor.summary()["lag_p50_ms"] == pytest.approx(0.5, abs=0.05)
