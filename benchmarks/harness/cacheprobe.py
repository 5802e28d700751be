"""Prompt-cache probe: cold, warm repeat, and shared prefix with a new suffix, on a long prompt."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from benchmarks.harness.plan import Message, build_messages, new_nonce
from benchmarks.harness.records import RequestRecord

PROBE_ROUNDS = 3
VARIANTS = ("cold", "warm", "shared_prefix")
CACHED_SPEEDUP_RATIO = 0.7  # warm TTFT below this share of cold TTFT: the server caches
NO_SPEEDUP_RATIO = 0.85  # warm TTFT above this share: no cache (if prefill is long enough)
MIN_SPEEDUP_MS = 2.0
MIN_VISIBLE_PREFILL_MS = 20.0  # below this, a cache could not show in TTFT

ProbeSend = Callable[[list[Message], str, str], Awaitable[RequestRecord]]


def probe_request_count() -> int:
    return PROBE_ROUNDS * len(VARIANTS)


async def probe_cache(
    send: ProbeSend, *, prompt: Sequence[Message], filler_words: int
) -> list[RequestRecord]:
    """Run the probe rounds; `send(messages, purpose, nonce)` returns one request's record."""
    records: list[RequestRecord] = []
    for _ in range(PROBE_ROUNDS):
        nonce = new_nonce()
        messages = build_messages(prompt, nonce=nonce, filler_words=filler_words)
        records.append(await send(messages, "probe_cold", nonce))
        records.append(await send(messages, "probe_warm", nonce))
        shared = build_messages(prompt, nonce=nonce, filler_words=filler_words, suffix=new_nonce())
        records.append(await send(shared, "probe_shared_prefix", nonce))
    return records


def probe_report(records: Sequence[RequestRecord], *, target_prompt_tokens: int) -> dict[str, Any]:
    """Median TTFT and cached tokens per variant, and whether the server caches, with evidence."""
    data: dict[str, Any] = {"target_prompt_tokens": target_prompt_tokens, "rounds": PROBE_ROUNDS}
    cold = _successes(records, "cold")
    data["prompt_tokens"] = _median([r.prompt_tokens for r in cold])
    for variant in VARIANTS:
        chosen = _successes(records, variant)
        data[f"{variant}_ttft_ms"] = _median([r.ttft_ms for r in chosen])
        data[f"{variant}_cached_prompt_tokens"] = _median([r.cached_prompt_tokens for r in chosen])
    data["server_caches"], data["evidence"] = cache_verdict(data)
    return data


def cache_verdict(data: dict[str, Any]) -> tuple[bool | None, str]:
    """True, False or None (unknown), and the evidence in one sentence."""
    cold_ms, warm_ms = data["cold_ttft_ms"], data["warm_ttft_ms"]
    warm_cached = data["warm_cached_prompt_tokens"]
    if warm_cached:
        return True, f"the server reported {warm_cached:.0f} cached prompt tokens on a warm repeat"
    if cold_ms is None or warm_ms is None:
        return None, "the probe requests did not succeed"
    timing = f"warm repeat TTFT {warm_ms:.1f} ms against {cold_ms:.1f} ms cold"
    if warm_ms < CACHED_SPEEDUP_RATIO * cold_ms and cold_ms - warm_ms > MIN_SPEEDUP_MS:
        return True, f"{timing}: repeats are faster"
    if warm_ms >= NO_SPEEDUP_RATIO * cold_ms and cold_ms >= MIN_VISIBLE_PREFILL_MS:
        reported = " and it reported 0 cached tokens" if warm_cached == 0 else ""
        return False, f"{timing}{reported}: repeats are not faster"
    return None, f"{timing}: too close to tell"


def _successes(records: Sequence[RequestRecord], variant: str) -> list[RequestRecord]:
    purpose = f"probe_{variant}"
    return [r for r in records if r.purpose == purpose and r.outcome == "success"]


def _median(values: Sequence[float | int | None]) -> float | None:
    known = [value for value in values if value is not None]
    return round(float(statistics.median(known)), 3) if known else None
