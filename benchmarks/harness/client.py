"""Async streaming client: one request in, one `RequestRecord` out, on pooled connections."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any

from benchmarks.harness.config import EndpointConfig, Limits
from benchmarks.harness.connector import Connection, Connector, default_ssl_context
from benchmarks.harness.errors import HarnessError, http_error_code
from benchmarks.harness.http11 import BodyReader, ResponseHead, read_head
from benchmarks.harness.policy import AddressPolicy
from benchmarks.harness.records import RequestRecord
from benchmarks.harness.sse import SSEEvent, SSEParser

ERROR_BODY_LIMIT_BYTES = 4096
RESCHEDULE_SLACK = 0.01  # share of the idle timeout a deadline may fire early by
_NOT_SSE_TYPES = ("text/html", "application/json", "text/xml", "application/xml")


class StreamState:
    """What the events of one stream said so far; arrival times in `perf_counter_ns`."""

    def __init__(self) -> None:
        self.token_ns: list[int] = []
        self.token_chars: list[int] = []
        self.first_answer_ns: int | None = None
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.done = False

    def on_event(self, event: SSEEvent, now_ns: int) -> None:
        data = event.data
        if event.event == "error":
            raise HarnessError("stream_error", f"the server sent an error event: {data[:200]}")
        if data == "[DONE]":
            self.done = True
            return
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise HarnessError("protocol", f"an event is not JSON: {data[:80]!r}") from exc
        if not isinstance(payload, dict):
            raise HarnessError("protocol", f"an event is not a JSON object: {data[:80]!r}")
        if payload.get("error"):
            raise HarnessError("stream_error", f"the stream carried an error: {data[:200]}")
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = payload.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self._on_choice(choices[0], now_ns)

    def _on_choice(self, choice: dict[str, Any], now_ns: int) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            answer = delta.get("content")
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        else:
            answer, reasoning = choice.get("text"), None
        answer_chars = len(answer) if isinstance(answer, str) else 0
        chars = answer_chars + (len(reasoning) if isinstance(reasoning, str) else 0)
        if chars:
            self.token_ns.append(now_ns)
            self.token_chars.append(chars)
            if answer_chars and self.first_answer_ns is None:
                self.first_answer_ns = now_ns
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason


class _Deadlines:
    """The deadline that binds next, and the error code it stands for (loop time, seconds).

    While a stream flows, the idle deadline moves on every read; the timer is moved only when
    it would fire more than `slack_s` early, so most reads cost a comparison, not a new timer.
    """

    def __init__(self, limits: Limits, started_s: float) -> None:
        self.limits = limits
        self.total_s = started_s + limits.total_timeout_s
        self.ttft_s: float | None = None
        self.slack_s = limits.idle_timeout_s * RESCHEDULE_SLACK
        self.code = "timeout_connect"

    def connect(self, now_s: float) -> float:
        return self._pick(now_s + self.limits.connect_timeout_s, "timeout_connect")

    def sent(self, timer: asyncio.Timeout, now_s: float) -> None:
        self.ttft_s = now_s + self.limits.ttft_timeout_s
        timer.reschedule(self._next(now_s, has_token=False))

    def read(self, timer: asyncio.Timeout, now_s: float, *, has_token: bool) -> None:
        # A pending deadline within the slack stands for the new one, and takes its code.
        when = self._next(now_s, has_token=has_token)
        current = timer.when()
        if current is None or when < current or when > current + self.slack_s:
            timer.reschedule(when)

    def drain(self, timer: asyncio.Timeout, now_s: float) -> None:
        timer.reschedule(self._pick(now_s + self.limits.drain_timeout_s, "timeout_idle"))

    def _next(self, now_s: float, *, has_token: bool) -> float:
        idle_s = now_s + self.limits.idle_timeout_s
        if not has_token and self.ttft_s is not None and self.ttft_s <= idle_s:
            return self._pick(self.ttft_s, "timeout_ttft")
        return self._pick(idle_s, "timeout_idle")

    def _pick(self, when_s: float, code: str) -> float:
        if when_s < self.total_s:
            self.code = code
            return when_s
        self.code = "timeout_total"
        return self.total_s


class RequestEncoder:
    """Builds the whole HTTP/1.1 request (head and JSON body); the fixed head is built once."""

    def __init__(self, endpoint: EndpointConfig) -> None:
        origin = endpoint.origin
        lines = [
            f"POST {endpoint.request_path} HTTP/1.1",
            f"Host: {origin.host_header}",
            "User-Agent: phasewise-harness",
            "Content-Type: application/json",
            "Accept: text/event-stream",
            *(f"{name}: {value}" for name, value in endpoint.all_headers()),
        ]
        if any("\r" in line or "\n" in line for line in lines):
            raise HarnessError("usage", "a header name or value contains a line break")
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")

    def __call__(self, body: dict[str, Any]) -> bytes:
        payload = json.dumps(body, separators=(",", ":")).encode()
        return b"%s%d\r\n\r\n%s" % (self._head, len(payload), payload)


class StreamingClient:
    """Sends streaming completions and times them; every failure becomes an error code.

    `run_start_ns` (`perf_counter_ns`) is the zero of `scheduled_s` and `sent_s`.
    """

    def __init__(
        self,
        endpoint: EndpointConfig,
        *,
        policy: AddressPolicy,
        limits: Limits,
        run_start_ns: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.encode = RequestEncoder(endpoint)
        self.limits = limits
        self.run_start_ns = run_start_ns
        origin = endpoint.origin
        if origin.tls and ssl_context is None:
            ssl_context = default_ssl_context(endpoint.ca_file)
        self.connector = Connector(origin, policy=policy, ssl_context=ssl_context)

    async def aclose(self) -> None:
        await self.connector.aclose()

    async def send(
        self, body: dict[str, Any], record: RequestRecord, *, scheduled_ns: int
    ) -> RequestRecord:
        """Send one request and fill `record`; re-raises only cancellation (after recording it)."""
        record.scheduled_s = (scheduled_ns - self.run_start_ns) / 1e9
        raw_request = self.encode(body)
        state = StreamState()
        sent_ns: int | None = None
        code: str | None = None
        message: str | None = None
        connection: Connection | None = None
        reusable = False
        loop = asyncio.get_running_loop()
        deadlines = _Deadlines(self.limits, loop.time())
        try:
            async with asyncio.timeout(deadlines.connect(loop.time())) as timer:
                connection, is_new = await self.connector.acquire()
                if is_new:
                    record.connect_ms = connection.connect_ms
                connection.writer.write(raw_request)
                await connection.writer.drain()
                sent_ns = time.perf_counter_ns()
                record.sent_s = (sent_ns - self.run_start_ns) / 1e9
                deadlines.sent(timer, loop.time())
                head = await read_head(connection.reader)
                record.ttfb_ms = (time.perf_counter_ns() - sent_ns) / 1e6
                record.http_status = head.status
                body_reader = BodyReader(connection.reader, head, self.limits.max_response_bytes)
                await _check_head(head, body_reader)
                await self._read_stream(body_reader, state, timer, deadlines)
                reusable = await _drain(body_reader, timer, deadlines, loop)
        except TimeoutError:
            code, message = deadlines.code, f"{deadlines.code.replace('_', ' ')} reached"
        except HarnessError as exc:
            code, message = exc.code, exc.message
        except ssl.SSLError as exc:
            code, message = "tls", str(exc)
        except OSError as exc:
            code, message = "disconnected", str(exc) or type(exc).__name__
        except asyncio.CancelledError:
            _finish(record, state, sent_ns, "cancelled", "the run was cancelled")
            raise
        finally:
            if connection is not None:
                self.connector.release(connection, reusable=reusable)
        _finish(record, state, sent_ns, code, message)
        return record

    async def _read_stream(
        self,
        body_reader: BodyReader,
        state: StreamState,
        timer: asyncio.Timeout,
        deadlines: _Deadlines,
    ) -> None:
        parser = SSEParser(self.limits.max_event_bytes)
        loop = asyncio.get_running_loop()
        on_event = state.on_event
        while data := await body_reader.read():
            now_ns = time.perf_counter_ns()
            for event in parser.feed(data):
                on_event(event, now_ns)
            if state.done:
                return
            deadlines.read(timer, loop.time(), has_token=bool(state.token_ns))
        for event in parser.feed(b"\n\n"):  # a last event the server did not terminate
            on_event(event, time.perf_counter_ns())


async def _check_head(head: ResponseHead, body_reader: BodyReader) -> None:
    if head.status != 200:
        text = (await body_reader.read_all(ERROR_BODY_LIMIT_BYTES)).decode("utf-8", "replace")
        raise HarnessError(http_error_code(head.status), f"HTTP {head.status}: {text[:300]}")
    if head.content_type.startswith(_NOT_SSE_TYPES):
        text = (await body_reader.read_all(ERROR_BODY_LIMIT_BYTES)).decode("utf-8", "replace")
        message = f"expected text/event-stream, got {head.content_type}: {text[:200]!r}"
        raise HarnessError("protocol", message)


async def _drain(
    body_reader: BodyReader,
    timer: asyncio.Timeout,
    deadlines: _Deadlines,
    loop: asyncio.AbstractEventLoop,
) -> bool:
    """Read what follows `[DONE]` so the connection can be reused; failures only cost reuse."""
    deadlines.drain(timer, loop.time())
    try:
        while await body_reader.read():
            pass
    except (HarnessError, OSError):
        return False
    return body_reader.reusable


def _finish(
    record: RequestRecord,
    state: StreamState,
    sent_ns: int | None,
    code: str | None,
    message: str | None,
) -> None:
    """Turn the stream state into the glossary's fields and decide the outcome."""
    usage = state.usage or {}
    record.prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        record.cached_prompt_tokens = _int_or_none(details.get("cached_tokens"))
    record.finish_reason = state.finish_reason
    completion_tokens = _int_or_none(usage.get("completion_tokens"))
    has_token = bool(state.token_ns)
    if sent_ns is not None and has_token:
        record.ttft_ms = (state.token_ns[0] - sent_ns) / 1e6
        record.e2e_ms = (state.token_ns[-1] - sent_ns) / 1e6
        if state.first_answer_ns is not None:
            record.ttfa_ms = (state.first_answer_ns - sent_ns) / 1e6
        record.chunk_offsets_us = [(t - sent_ns) // 1000 for t in state.token_ns]
        record.chunk_chars = state.token_chars
    if completion_tokens is not None:
        record.output_tokens = completion_tokens
    elif has_token:
        record.output_tokens = len(state.token_ns)
        record.tokens_estimated = True
    finished = state.done or state.finish_reason is not None
    if has_token and finished and code != "cancelled":
        record.outcome, record.error_code, record.error_message = "success", None, None
    elif has_token:
        record.outcome = "incomplete"
        record.error_code = code or "disconnected"
        record.error_message = message or "the stream ended without [DONE] or a finish reason"
    else:
        record.outcome = "error"
        record.error_code = code or ("no_tokens" if finished else "disconnected")
        record.error_message = message or "the stream ended without a generated token"


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
