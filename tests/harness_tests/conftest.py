"""Fixtures for the harness tests: fault servers on 127.0.0.1 and a one-request helper."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from benchmarks.harness.client import StreamingClient
from benchmarks.harness.config import EndpointConfig, Limits
from benchmarks.harness.policy import AddressPolicy, AllowAll
from benchmarks.harness.records import RequestRecord
from tests.harness_tests.fault_server import FaultServer

FAST_LIMITS = Limits(
    connect_timeout_s=2.0,
    ttft_timeout_s=0.4,
    idle_timeout_s=0.4,
    total_timeout_s=1.0,
    max_response_bytes=256 * 1024,
    max_event_bytes=64 * 1024,
)


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer(first_token_delay_s=0.03, token_delay_s=0.01) as fault_server:
        yield fault_server


@pytest.fixture
def fresh_server() -> Iterator[FaultServer]:
    with FaultServer() as fault_server:
        yield fault_server


def send_one(
    base_url: str,
    model: str,
    *,
    limits: Limits = FAST_LIMITS,
    api: str = "chat",
    max_tokens: int = 5,
    policy: AddressPolicy | None = None,
    count: int = 1,
    **endpoint_options: object,
) -> list[RequestRecord]:
    """Send `count` requests one after the other on one client; return their records."""
    endpoint = EndpointConfig(base_url=base_url, model=model, api=api, **endpoint_options)  # type: ignore[arg-type]

    async def run() -> list[RequestRecord]:
        client = StreamingClient(
            endpoint,
            policy=policy or AllowAll(),
            limits=limits,
            run_start_ns=time.perf_counter_ns(),
        )
        body: dict[str, object] = {"model": model, "stream": True, "max_tokens": max_tokens}
        if api == "chat":
            body["messages"] = [{"role": "user", "content": "hello there"}]
        else:
            body["prompt"] = "hello there"
        records = []
        try:
            for _ in range(count):
                record = RequestRecord(1, 10, max_tokens)
                records.append(await client.send(body, record, scheduled_ns=time.perf_counter_ns()))
        finally:
            await client.aclose()
        return records

    return asyncio.run(run())
