"""A small OpenAI-style streaming server on 127.0.0.1 that can misbehave on request.

The request's `model` names the scenario (see `SCENARIOS`); it counts connections and keeps
every request body, so tests can see what was (and was not) sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

TOKEN = "tok "


def prompt_tokens_of(body: dict[str, Any]) -> int:
    """The server's 'tokenizer': one token per 4 characters, plus 3 per message."""
    if "messages" in body:
        return sum(len(m["content"]) // 4 + 3 for m in body["messages"])
    return len(body.get("prompt", "")) // 4 + 1


def prompt_text(body: dict[str, Any]) -> str:
    if "messages" in body:
        return "\n".join(m["content"] for m in body["messages"])
    return str(body.get("prompt", ""))


@dataclass
class Reply:
    """What one scenario sends, built up as the handler runs."""

    writer: asyncio.StreamWriter
    framing: str = "chunked"  # chunked | length | close
    line_end: str = "\n"
    buffered: list[bytes] = field(default_factory=list)
    started: bool = False

    async def head(self, status: int = 200, content_type: str = "text/event-stream") -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}"]
        if self.framing == "chunked":
            lines.append("Transfer-Encoding: chunked")
        elif self.framing == "close":
            lines.append("Connection: close")
        self.started = True
        if self.framing == "length":
            self._head = lines
            return
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def raw(self, data: bytes) -> None:
        if self.framing == "length":
            self.buffered.append(data)
            return
        if self.framing == "chunked":
            data = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        self.writer.write(data)
        await self.writer.drain()

    async def event(self, payload: Any, *, name: str | None = None) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        end = self.line_end
        prefix = f"event: {name}{end}" if name else ""
        await self.raw(f"{prefix}data: {text}{end}{end}".encode())

    async def finish(self) -> None:
        if self.framing == "length":
            body = b"".join(self.buffered)
            head = [*self._head, f"Content-Length: {len(body)}"]
            self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        elif self.framing == "chunked":
            self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "x", "object": "chat.completion.chunk", "choices": [choice], **extra}


def usage(body: dict[str, Any], completion_tokens: int, cached: int | None = None) -> dict:
    data: dict[str, Any] = {
        "prompt_tokens": prompt_tokens_of(body),
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens_of(body) + completion_tokens,
    }
    if cached is not None:
        data["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "x", "choices": [], "usage": data}


class FaultServer:
    """Runs in a background thread with its own event loop; `base_url` ends in `/v1`."""

    def __init__(
        self,
        *,
        token_delay_s: float = 0.0,
        first_token_delay_s: float = 0.0,
        prefill_s_per_token: float = 0.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.token_delay_s = token_delay_s
        self.first_token_delay_s = first_token_delay_s
        self.prefill_s_per_token = prefill_s_per_token
        self.ssl_context = ssl_context
        self.connections = 0
        self.requests: list[dict[str, Any]] = []
        self.seen_prompts: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Close the listener and every connection; safe to call twice."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._shutdown)
            self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, ssl=self.ssl_context)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def _shutdown(self) -> None:
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._loop.stop()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                path, body = request
                self.requests.append({"path": path, **body})
                keep_open = await self._respond(path, body, writer)
                if not keep_open:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _respond(self, path: str, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        if path.endswith("/models"):
            data = json.dumps({"object": "list", "data": [{"id": "ok", "object": "model"}]})
            reply = Reply(writer, framing="length")
            await reply.head(content_type="application/json")
            await reply.raw(data.encode())
            await reply.finish()
            return True
        scenario = str(body.get("model", "ok"))
        handler = SCENARIOS.get(scenario.split(":")[0], SCENARIOS["ok"])
        reply = Reply(writer)
        result = await handler(self, body, reply)
        return result is not False and reply.framing != "close"

    async def tokens(
        self, body: dict[str, Any], reply: Reply, *, per_chunk: int = 1, key: str = "content"
    ) -> int:
        """Prefill delay, then max_tokens tokens `per_chunk` at a time; returns tokens sent."""
        count = int(body.get("max_tokens", 5))
        await asyncio.sleep(self.prefill_delay_s(body))
        sent = 0
        while sent < count:
            n = min(per_chunk, count - sent)
            if sent:
                await asyncio.sleep(self.token_delay_s)
            await reply.event(chunk({key: TOKEN * n}))
            sent += n
        return sent

    def prefill_delay_s(self, body: dict[str, Any]) -> float:
        uncached = prompt_tokens_of(body) - (self.cached_tokens(body) or 0)
        return self.first_token_delay_s + uncached * self.prefill_s_per_token

    def cached_tokens(self, body: dict[str, Any]) -> int | None:
        """Tokens of the longest prefix seen before (model `caching`; `caching:silent` hides it)."""
        if not str(body.get("model", "")).startswith("caching"):
            return None
        text = prompt_text(body)
        prefixes = (os.path.commonprefix([text, seen]) for seen in self.seen_prompts)  # noqa: RUF071
        best = max((len(prefix) for prefix in prefixes), default=0)
        return best // 4


Handler = Callable[[FaultServer, dict[str, Any], Reply], Awaitable[bool | None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, Any]] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    path = lines[0].split(" ")[1]
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", 0))
    raw = await reader.readexactly(length) if length else b"{}"
    return path, {**json.loads(raw or b"{}"), "_headers": headers}


async def _standard(
    server: FaultServer, body: dict[str, Any], reply: Reply, *, silent: bool = False, **kw: Any
) -> None:
    """Role-only first chunk, tokens, a finish chunk, a usage chunk with empty choices, [DONE]."""
    await reply.head()
    await reply.event(chunk({"role": "assistant", "content": ""}))
    sent = await server.tokens(body, reply, **kw)
    await reply.event(chunk(finish="stop"))
    await reply.event(usage(body, sent, None if silent else server.cached_tokens(body)))
    await reply.event("[DONE]")
    await reply.finish()


async def ok(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await _standard(server, body, reply)


async def caching(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await _standard(server, body, reply, silent=str(body["model"]).endswith(":silent"))
    server.seen_prompts.append(prompt_text(body))


async def slow_usage(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """The usage chunk and [DONE] come 200 ms after the last token: E2E must not include that."""
    await reply.head()
    sent = await server.tokens(body, reply)
    await reply.event(chunk(finish="stop"))
    await asyncio.sleep(0.2)
    await reply.event(usage(body, sent))
    await reply.event("[DONE]")
    await reply.finish()


async def multi(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await _standard(server, body, reply, per_chunk=3)


async def strict(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """Refuses parameters it does not know (as OpenAI's own API does) with a 400."""
    if "ignore_eos" in body or "min_tokens" in body:
        body["model"] = "status:400"
        await status(server, body, reply)
    else:
        await _standard(server, body, reply)


async def crlf(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    reply.line_end = "\r\n"
    await _standard(server, body, reply)


async def content_length(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    reply.framing = "length"
    await _standard(server, body, reply)


async def close_delimited(server: FaultServer, body: dict[str, Any], reply: Reply) -> bool:
    reply.framing = "close"
    await _standard(server, body, reply)
    return False


async def no_usage(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    sent = await server.tokens(body, reply, per_chunk=2)
    assert sent
    await reply.event(chunk(finish="length"))
    await reply.event("[DONE]")
    await reply.finish()


async def reasoning(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """Two reasoning chunks (key from the scenario suffix), then the answer."""
    key = str(body["model"]).partition(":")[2] or "reasoning_content"
    await reply.head()
    await reply.event(chunk({"role": "assistant"}))
    for _ in range(2):
        await reply.event(chunk({key: "think "}))
        await asyncio.sleep(0.02)
    sent = await server.tokens(body, reply)
    await reply.event(chunk(finish="stop"))
    await reply.event(usage(body, sent + 2))
    await reply.event("[DONE]")
    await reply.finish()


async def comments(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.raw(b": keep-alive\n\n: another comment\n")
    await reply.event(chunk({"content": TOKEN}))
    await reply.raw(b":\n\nid: 7\nretry: 10\n\n")
    await reply.event(chunk({"content": TOKEN}, finish="stop"))
    await reply.raw(b": ping\n\n")
    await reply.event(usage(body, 2))
    await reply.event("[DONE]")
    await reply.finish()


async def error_event(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.event({"message": "overloaded"}, name="error")
    await reply.finish()


async def error_payload(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.event(chunk({"content": TOKEN}))
    await reply.event({"error": {"message": "model crashed", "code": 500}})
    await reply.finish()


async def html(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    reply.framing = "length"
    await reply.head(content_type="text/html")
    await reply.raw(b"<html><body>Login required</body></html>")
    await reply.finish()


async def status(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """`status:429`, `status:500`, `status:302`..."""
    code = int(str(body["model"]).partition(":")[2])
    reply.framing = "length"
    await reply.head(code, content_type="application/json")
    await reply.raw(json.dumps({"error": {"message": f"status {code}"}}).encode())
    await reply.finish()


async def stall(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """Headers and a role chunk, then nothing (TTFT deadline); `stall:token` after a token."""
    await reply.head()
    await reply.event(chunk({"role": "assistant"}))
    if str(body["model"]).endswith(":token"):
        await reply.event(chunk({"content": TOKEN}))
    await asyncio.sleep(30)


async def stall_head(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await asyncio.sleep(30)


async def trickle(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """A token, then one keep-alive byte every 20 ms forever: only the total deadline ends it."""
    await reply.head()
    await reply.event(chunk({"content": TOKEN}))
    while True:
        await reply.raw(b":")
        await asyncio.sleep(0.02)


async def disconnect(server: FaultServer, body: dict[str, Any], reply: Reply) -> bool:
    await reply.head()
    await reply.event(chunk({"content": TOKEN}))
    await reply.event(chunk({"content": TOKEN}))
    reply.writer.transport.abort()
    return False


async def no_finish(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    """Tokens and a clean end of body, but neither [DONE] nor a finish reason."""
    await reply.head()
    await server.tokens(body, reply)
    await reply.finish()


async def finish_no_done(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    sent = await server.tokens(body, reply)
    await reply.event(chunk(finish="stop"))
    await reply.event(usage(body, sent))
    await reply.finish()


async def empty(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.event(chunk({"role": "assistant", "content": ""}, finish="stop"))
    await reply.event("[DONE]")
    await reply.finish()


async def huge_event(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.raw(b"data: " + b"x" * (2 * 1024 * 1024))
    await reply.finish()


async def huge_body(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    payload = chunk({"content": TOKEN * 100})
    while True:
        await reply.event(payload)


async def completions(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    count = int(body.get("max_tokens", 5))
    for _ in range(count):
        await reply.event({"choices": [{"index": 0, "text": TOKEN, "finish_reason": None}]})
    await reply.event({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]})
    await reply.event(usage(body, count))
    await reply.event("[DONE]")
    await reply.finish()


async def not_json(server: FaultServer, body: dict[str, Any], reply: Reply) -> None:
    await reply.head()
    await reply.event("this is not json")
    await reply.finish()


SCENARIOS: dict[str, Handler] = {
    name: handler
    for name, handler in globals().items()
    if callable(handler)
    and getattr(handler, "__module__", None) == __name__
    and asyncio.iscoroutinefunction(handler)
    and not name.startswith("_")
}


def wait_for(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
