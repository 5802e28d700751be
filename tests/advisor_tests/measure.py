"""Measure a server with the harness's streaming client: a small sweep and a cache probe.

A thin driver over `benchmarks.harness.client.StreamingClient` and `loadgen.run_load`, so the
advisor is tested on records exactly as the harness produces them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

from advisor.core.samples import CacheProbe
from benchmarks.harness.client import StreamingClient
from benchmarks.harness.config import EndpointConfig, Limits
from benchmarks.harness.loadgen import run_load
from benchmarks.harness.policy import AllowAll
from benchmarks.harness.records import RequestRecord

_nonce = itertools.count()


def prompt(tokens: int, *, prefix: str = "", unique: bool = True) -> str:
    """A prompt of `tokens` whitespace tokens (the indie server's tokenizer), nonce first."""
    head = [f"n{next(_nonce)}-{time.time_ns()}"] if unique else []
    body = prefix.split() + [f"w{i % 97}" for i in range(tokens)]
    return " ".join(head + body)[: 1 << 24]


def _body(text: str, output_tokens: int, model: str = "indie") -> dict[str, object]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": text}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": output_tokens,
        "ignore_eos": True,
    }


@dataclass(frozen=True)
class SweepPlan:
    prompt_lengths: tuple[int, ...] = (64, 512, 2048)
    concurrencies: tuple[int, ...] = (1, 4)
    output_tokens: int = 16
    requests: int = 8
    prefix_tokens: int = 0
    requests_per_client: int = 0
    """When set, a point at concurrency c sends at least this many requests per client."""
    model: str = "indie"


async def _sweep(base_url: str, plan: SweepPlan) -> list[RequestRecord]:
    start_ns = time.perf_counter_ns()
    client = StreamingClient(
        EndpointConfig(base_url=base_url, model=plan.model),
        policy=AllowAll(),
        limits=Limits(ttft_timeout_s=30, total_timeout_s=60),
        run_start_ns=start_ns,
    )
    records: list[RequestRecord] = []
    prefix = " ".join(f"p{i}" for i in range(plan.prefix_tokens))
    try:
        for concurrency, length in itertools.product(plan.concurrencies, plan.prompt_lengths):
            own = max(length - plan.prefix_tokens, 1)

            async def send(
                index: int, warmup: bool, scheduled_ns: int, c: int = concurrency, p: int = own
            ) -> object:
                record = RequestRecord(
                    concurrency=c,
                    target_prompt_tokens=p + plan.prefix_tokens,
                    target_output_tokens=plan.output_tokens,
                    warmup=warmup,
                )
                # Without a prefix the nonce leads, so no cache can hit; with one the nonce
                # follows the prefix, as a real shared system prompt would.
                text = prefix + " " + prompt(p) if prefix else prompt(p)
                body = _body(text, plan.output_tokens, plan.model)
                await client.send(body, record, scheduled_ns=scheduled_ns)
                records.append(record)
                return record

            requests = max(plan.requests, plan.requests_per_client * concurrency)
            await run_load(send, concurrency=concurrency, requests=requests, warmup=concurrency)
    finally:
        await client.aclose()
    return records


def sweep(base_url: str, plan: SweepPlan) -> list[RequestRecord]:
    """Closed-loop sweep over prompt lengths x concurrencies; warm-up of one per slot."""
    return asyncio.run(_sweep(base_url, plan))


async def _probe(base_url: str, prompt_tokens: int) -> CacheProbe:
    client = StreamingClient(
        EndpointConfig(base_url=base_url, model="indie"),
        policy=AllowAll(),
        limits=Limits(),
        run_start_ns=time.perf_counter_ns(),
    )
    text = prompt(prompt_tokens)
    ttfts: list[float | None] = []
    cached: int | None = None
    try:
        for _ in range(2):
            record = RequestRecord(
                concurrency=1, target_prompt_tokens=prompt_tokens, target_output_tokens=2
            )
            await client.send(_body(text, 2), record, scheduled_ns=time.perf_counter_ns())
            ttfts.append(record.ttft_ms)
            cached = record.cached_prompt_tokens
    finally:
        await client.aclose()
    cold, warm = ttfts
    caches = None
    if cold is not None and warm is not None:
        caches = warm < 0.8 * cold or bool(cached)
    return CacheProbe(
        server_caches=caches,
        cold_ttft_ms=cold,
        warm_ttft_ms=warm,
        prompt_tokens=prompt_tokens,
        warm_cached_tokens=cached,
    )


def cache_probe(base_url: str, prompt_tokens: int) -> CacheProbe:
    """Cold then warm TTFT of one repeated prompt, as the harness's cache probe does."""
    return asyncio.run(_probe(base_url, prompt_tokens))
