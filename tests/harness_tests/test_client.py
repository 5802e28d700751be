"""The streaming client against every stream variant and failure of the fault server."""

from __future__ import annotations

import time

import pytest

from benchmarks.harness.errors import HarnessError
from benchmarks.harness.metrics import ERROR_CODES
from tests.harness_tests.conftest import send_one
from tests.harness_tests.fault_server import FaultServer


def test_it_times_a_normal_stream_from_usage_not_chunks(server: FaultServer) -> None:
    (record,) = send_one(server.base_url, "ok")
    assert record.outcome == "success", record.error_message
    assert record.output_tokens == 5
    assert not record.tokens_estimated
    assert record.finish_reason == "stop"
    assert record.prompt_tokens is not None
    assert record.prompt_tokens > 0
    assert record.cached_prompt_tokens is None  # unknown, not 0
    assert len(record.chunk_offsets_us) == len(record.chunk_chars) == 5
    assert record.chunk_chars == [4] * 5
    assert record.http_status == 200


def test_it_ignores_the_role_only_first_chunk(server: FaultServer) -> None:
    # The role chunk arrives at once; the first token after the 30 ms first-token delay.
    (record,) = send_one(server.base_url, "ok")
    assert record.ttfb_ms is not None
    assert record.ttft_ms is not None
    assert record.ttft_ms >= 29
    assert record.ttft_ms - record.ttfb_ms >= 15
    assert record.ttfa_ms == record.ttft_ms


def test_it_derives_tpot_and_itl_from_chunk_arrivals(server: FaultServer) -> None:
    (record,) = send_one(server.base_url, "ok", max_tokens=6)
    assert record.tpot_ms is not None
    assert 8 <= record.tpot_ms <= 40  # server writes a token every 10 ms
    assert len(record.itl_ms) == 5
    assert record.ttft_ms is not None
    assert record.e2e_ms == pytest.approx(record.ttft_ms + sum(record.itl_ms), abs=0.01)


def test_it_does_not_let_the_usage_chunk_extend_e2e(server: FaultServer) -> None:
    started = time.perf_counter()
    (record,) = send_one(server.base_url, "slow_usage", max_tokens=2)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert record.outcome == "success"
    assert record.output_tokens == 2
    assert elapsed_ms > 200
    assert record.e2e_ms is not None
    assert record.e2e_ms < 150


def test_it_reads_several_tokens_in_one_chunk_from_usage(server: FaultServer) -> None:
    (record,) = send_one(server.base_url, "multi", max_tokens=5)
    assert record.outcome == "success"
    assert len(record.chunk_offsets_us) == 2  # 3 + 2 tokens
    assert record.output_tokens == 5
    assert record.tpot_ms is not None  # per token, from usage


def test_it_counts_chunks_and_flags_it_when_usage_is_missing(server: FaultServer) -> None:
    (record,) = send_one(server.base_url, "no_usage", max_tokens=5)
    assert record.outcome == "success"
    assert record.tokens_estimated
    assert record.output_tokens == 3  # 2 + 2 + 1 tokens in three chunks
    assert record.prompt_tokens is None


@pytest.mark.parametrize("model", ["reasoning", "reasoning:reasoning"])
def test_it_counts_reasoning_as_tokens_but_not_as_answer(server: FaultServer, model: str) -> None:
    (record,) = send_one(server.base_url, model, max_tokens=3)
    assert record.outcome == "success"
    assert record.ttft_ms is not None
    assert record.ttfa_ms is not None
    assert record.ttfa_ms - record.ttft_ms >= 30  # two reasoning chunks 20 ms apart, then prefill
    assert record.output_tokens == 5
    assert len(record.chunk_offsets_us) == 5


@pytest.mark.parametrize(
    ("model", "api", "tokens"),
    [
        ("crlf", "chat", 5),
        ("comments", "chat", 2),
        ("content_length", "chat", 5),
        ("close_delimited", "chat", 5),
        ("finish_no_done", "chat", 5),
        ("completions", "completions", 5),
    ],
)
def test_it_accepts_what_real_servers_send(
    server: FaultServer, model: str, api: str, tokens: int
) -> None:
    (record,) = send_one(server.base_url, model, api=api)
    assert (record.outcome, record.error_code) == ("success", None), record.error_message
    assert record.output_tokens == tokens
    assert not record.tokens_estimated


@pytest.mark.parametrize(
    ("model", "outcome", "code"),
    [
        ("error_event", "error", "stream_error"),
        ("error_payload", "incomplete", "stream_error"),
        ("html", "error", "protocol"),
        ("not_json", "error", "protocol"),
        ("status:401", "error", "http_401"),
        ("status:429", "error", "http_429"),
        ("status:404", "error", "http_4xx"),
        ("status:500", "error", "http_5xx"),
        ("status:302", "error", "http_3xx"),
        ("disconnect", "incomplete", "disconnected"),
        ("no_finish", "incomplete", "disconnected"),
        ("empty", "error", "no_tokens"),
        ("huge_event", "error", "too_large"),
        ("huge_body", "incomplete", "too_large"),
    ],
)
def test_it_maps_every_failure_to_a_stable_code(
    server: FaultServer, model: str, outcome: str, code: str
) -> None:
    (record,) = send_one(server.base_url, model)
    assert (record.outcome, record.error_code) == (outcome, code), record.error_message
    assert code in ERROR_CODES
    assert record.error_message


@pytest.mark.parametrize(
    ("model", "outcome", "code"),
    [
        ("stall", "error", "timeout_ttft"),  # headers and a role chunk, then silence
        ("stall_head", "error", "timeout_ttft"),  # not even headers
        ("stall:token", "incomplete", "timeout_idle"),
        ("trickle", "incomplete", "timeout_total"),  # a byte every 20 ms keeps idle at bay
    ],
)
def test_it_bounds_slow_servers_by_deadlines(
    server: FaultServer, model: str, outcome: str, code: str
) -> None:
    started = time.perf_counter()
    (record,) = send_one(server.base_url, model)
    elapsed_s = time.perf_counter() - started
    assert (record.outcome, record.error_code) == (outcome, code), record.error_message
    assert elapsed_s < 2.0  # total deadline 1 s, plus set-up


def test_it_reports_a_refused_connection(fresh_server: FaultServer) -> None:
    port = fresh_server.port
    fresh_server.stop()
    (record,) = send_one(f"http://127.0.0.1:{port}/v1", "ok")
    assert (record.outcome, record.error_code) == ("error", "connect")
    assert record.sent_s is None
    assert record.client_delay_ms is None


def test_it_reuses_connections_and_records_set_up_apart(fresh_server: FaultServer) -> None:
    first, second, third = send_one(fresh_server.base_url, "ok", count=3)
    assert all(record.outcome == "success" for record in (first, second, third))
    assert first.connect_ms is not None
    assert first.connect_ms > 0
    assert second.connect_ms is None
    assert third.connect_ms is None
    assert fresh_server.connections == 1


def test_it_opens_a_new_connection_after_a_close_delimited_body(fresh_server: FaultServer) -> None:
    records = send_one(fresh_server.base_url, "close_delimited", count=2)
    assert [record.outcome for record in records] == ["success", "success"]
    assert records[1].connect_ms is not None
    assert fresh_server.connections == 2


@pytest.mark.parametrize(
    ("key_header", "expected"), [("Authorization", "Bearer sk-canary"), ("api-key", "sk-canary")]
)
def test_it_sends_the_key_and_extra_headers(
    fresh_server: FaultServer, key_header: str, expected: str
) -> None:
    (record,) = send_one(
        fresh_server.base_url,
        "ok",
        api_key="sk-canary",
        api_key_header=key_header,
        headers=(("X-Team", "perf"),),
    )
    assert record.outcome == "success"
    headers = fresh_server.requests[-1]["_headers"]
    assert headers[key_header.lower()] == expected
    assert headers["x-team"] == "perf"
    assert "sk-canary" not in repr(record)


def test_a_header_with_a_line_break_is_refused_before_sending(fresh_server: FaultServer) -> None:
    with pytest.raises(HarnessError) as caught:
        send_one(fresh_server.base_url, "ok", headers=(("X-Evil", "a\r\nX-Injected: 1"),))
    assert caught.value.code == "usage"
    assert fresh_server.requests == []
