"""Faults on demand: through the X-Sim-Fault header and through a profile's fault rates."""

from __future__ import annotations

import dataclasses
import itertools
import json
import time

import httpx
import openai
import pytest

from simulator.inprocess import RunningSimulator, simulator_in_thread
from simulator.profile import PRESETS

BODY = {
    "model": "llama-8b-h100",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 8,
    "ignore_eos": True,
    "stream": True,
}


def stream_events(sim: RunningSimulator, fault: str) -> list[tuple[float, str]]:
    """(arrival time in s, data payload) of every SSE event, up to the end or the break."""
    events: list[tuple[float, str]] = []
    with httpx.stream(
        "POST", f"{sim.base_url}/chat/completions", json=BODY, headers={"X-Sim-Fault": fault}
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append((time.perf_counter(), line.removeprefix("data: ")))
    return events


def token_times(events: list[tuple[float, str]]) -> list[float]:
    return [
        t
        for t, data in events
        if data != "[DONE]" and '"content":"' in data and '"content":""' not in data
    ]


def test_it_answers_500_on_demand(sim: RunningSimulator, client: openai.OpenAI) -> None:
    response = httpx.post(
        f"{sim.base_url}/chat/completions", json=BODY, headers={"X-Sim-Fault": "error_500"}
    )
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "server_error"
    with pytest.raises(openai.InternalServerError):
        client.with_options(default_headers={"X-Sim-Fault": "error_500"}).chat.completions.create(
            model="llama-8b-h100",
            messages=[{"role": "user", "content": "hi"}],
        )


def test_it_rate_limits_with_retry_after(sim: RunningSimulator) -> None:
    response = httpx.post(
        f"{sim.base_url}/chat/completions",
        json=BODY,
        headers={"X-Sim-Fault": "rate_limit;retry_after_s=7"},
    )
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_it_sends_one_malformed_event(sim: RunningSimulator) -> None:
    events = stream_events(sim, "malformed;after_chunks=3")
    broken = []
    for _, data in events:
        if data == "[DONE]":
            continue
        try:
            json.loads(data)
        except ValueError:
            broken.append(data)
    assert len(broken) == 1
    assert events[-1][1] == "[DONE]"


def test_it_stalls_mid_stream(sim: RunningSimulator) -> None:
    times = token_times(stream_events(sim, "stall;after_chunks=3;stall_ms=400"))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) >= 0.39
    assert gaps.index(max(gaps)) == 2
    assert sorted(gaps)[-2] < 0.1


def test_it_trickles_chunks_slowly(sim: RunningSimulator) -> None:
    times = token_times(stream_events(sim, "trickle;interval_ms=80"))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 7
    assert min(gaps) >= 0.075


def test_it_disconnects_mid_stream(sim: RunningSimulator) -> None:
    events: list[str] = []
    with httpx.stream(
        "POST",
        f"{sim.base_url}/chat/completions",
        json=BODY,
        headers={"X-Sim-Fault": "disconnect;after_chunks=2"},
    ) as response:
        request_id = response.headers["X-Sim-Request-Id"]
        lines = response.iter_lines()
        with pytest.raises(httpx.RemoteProtocolError):
            events.extend(line for line in lines if line.startswith("data: "))
    assert 2 <= len(events) < 8
    record = httpx.get(f"{sim.root_url}/sim/ground-truth/{request_id}").json()
    assert record["outcome"] == "disconnected"
    assert record["fault"] == "disconnect"


def test_it_refuses_an_unknown_fault(sim: RunningSimulator) -> None:
    response = httpx.post(
        f"{sim.base_url}/chat/completions", json=BODY, headers={"X-Sim-Fault": "meteor"}
    )
    assert response.status_code == 400
    assert "unknown fault" in response.json()["error"]["message"]


def test_it_draws_faults_from_the_profile_rates() -> None:
    always = dataclasses.replace(
        PRESETS["llama-8b-h100"], name="flaky", fault_rates={"rate_limit": 1.0}
    )
    never = dataclasses.replace(
        PRESETS["llama-8b-h100"], name="steady", fault_rates={"rate_limit": 0.0}
    )
    with simulator_in_thread(profiles=[always, never], time_scale=0.02) as sim:
        statuses = {
            name: httpx.post(
                f"{sim.base_url}/chat/completions", json={**BODY, "model": name, "stream": False}
            ).status_code
            for name in ("flaky", "steady")
        }
    assert statuses == {"flaky": 429, "steady": 200}


def test_it_frees_the_slot_of_a_client_that_hangs_up(sim: RunningSimulator) -> None:
    body = {**BODY, "max_tokens": 50_000}  # about 6 s of decoding unless the slot is freed
    with httpx.stream("POST", f"{sim.base_url}/chat/completions", json=body) as response:
        request_id = response.headers["X-Sim-Request-Id"]
        for index, _ in enumerate(response.iter_lines()):
            if index > 4:
                break
    scheduler = sim.server.engines["llama-8b-h100"].scheduler
    deadline = time.monotonic() + 5
    while scheduler.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert scheduler.running == []
    record = httpx.get(f"{sim.root_url}/sim/ground-truth/{request_id}").json()
    assert record["outcome"] == "client_disconnected"


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("malformed", "not_json"),
        ("stall;stall_ms=300", "slow"),
        ("disconnect", "no_response"),
    ],
)
def test_it_applies_faults_to_non_streaming_responses(
    sim: RunningSimulator, fault: str, check: str
) -> None:
    body = {**BODY, "stream": False}
    sent_s = time.perf_counter()
    try:
        response = httpx.post(
            f"{sim.base_url}/chat/completions", json=body, headers={"X-Sim-Fault": fault}
        )
    except httpx.RemoteProtocolError:
        assert check == "no_response"
        return
    assert check != "no_response"
    if check == "not_json":
        with pytest.raises(json.JSONDecodeError):
            json.loads(response.content)
    else:
        assert time.perf_counter() - sent_s >= 0.3
        assert response.json()["usage"]["completion_tokens"] == 8


def test_it_refuses_an_empty_prompt(sim: RunningSimulator) -> None:
    response = httpx.post(
        f"{sim.base_url}/completions", json={"model": "llama-8b-h100", "prompt": ""}
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "prompt"
