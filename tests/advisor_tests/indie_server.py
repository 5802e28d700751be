"""An independent OpenAI-compatible streaming server with explicit, known latency parameters.

Plain asyncio; imports nothing from `advisor` or `simulator`, so the advisor is checked against
physics it did not write. Tokens are whitespace-separated words.

Per request: wait `overhead_ms`; wait for one of `slots` (queueing); prefill for
`prefill_ms_per_token` x uncached prompt tokens; then one token per step, a step lasting
`tpot_ms` x (1 + batch_slope x (requests holding a slot - 1))
+ `tpot_ms_per_1k_context` x context tokens / 1000.
With `prefix_cache`, the longest prefix (whole 16-token blocks) shared with an earlier prompt is
cached. `reasoning_tokens` are streamed as `reasoning_content` before the answer.

Run: python -m tests.advisor_tests.indie_server --params '{"tpot_ms": 2}' --port 0
(prints "listening on PORT" once ready).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

CACHE_BLOCK_TOKENS = 16
CACHE_PROMPTS = 512


@dataclass(frozen=True)
class ServerParams:
    """The server's physics; durations in ms."""

    overhead_ms: float = 2.0
    prefill_ms_per_token: float = 0.005
    tpot_ms: float = 2.0
    slots: int = 64
    batch_slope: float = 0.0
    tpot_ms_per_1k_context: float = 0.0
    prefix_cache: bool = False
    reasoning_tokens: int = 0
    send_usage: bool = True

    def prefill_ms(self, uncached_tokens: int) -> float:
        return self.prefill_ms_per_token * uncached_tokens

    def step_ms(self, active: int, context_tokens: int) -> float:
        """One decode step (ms) with `active` requests holding a slot."""
        batch = 1.0 + self.batch_slope * max(active - 1, 0)
        return self.tpot_ms * batch + self.tpot_ms_per_1k_context * context_tokens / 1000.0


class PrefixCache:
    """Prompts seen before, by block-aligned prefix hash; answers how many leading tokens hit."""

    def __init__(self) -> None:
        self._prefixes: dict[int, None] = {}

    def lookup_and_add(self, tokens: list[str]) -> int:
        cached = 0
        blocks = len(tokens) // CACHE_BLOCK_TOKENS
        hit = True
        for block in range(1, blocks + 1):
            key = hash(tuple(tokens[: block * CACHE_BLOCK_TOKENS]))
            if hit and key in self._prefixes:
                cached = block * CACHE_BLOCK_TOKENS
            else:
                hit = False
                self._prefixes[key] = None
        while len(self._prefixes) > CACHE_PROMPTS * 64:
            self._prefixes.pop(next(iter(self._prefixes)))
        return min(cached, max(len(tokens) - 1, 0))


class IndieServer:
    """The server's state: its slots, the requests holding one now, its prefix cache."""

    def __init__(self, params: ServerParams) -> None:
        self.params = params
        self.slots = asyncio.Semaphore(params.slots)
        self.active = 0
        self.cache = PrefixCache()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if method == "GET" and path.endswith("/models"):
                    await self._json(writer, {"object": "list", "data": [{"id": "indie"}]})
                elif method == "POST" and path.endswith("/chat/completions"):
                    await self._stream(writer, json.loads(body))
                else:
                    await self._json(writer, {"error": {"message": "not found"}}, status=404)
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _json(
        self, writer: asyncio.StreamWriter, payload: dict[str, Any], status: int = 200
    ) -> None:
        data = json.dumps(payload).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, request: dict[str, Any]) -> None:
        arrived = time.monotonic()
        params = self.params
        tokens = " ".join(str(m.get("content", "")) for m in request["messages"]).split()
        output_tokens = int(request.get("max_tokens") or 16)
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        send = _EventWriter(writer)
        await send.event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        await _sleep_until(arrived + params.overhead_ms / 1000.0)
        async with self.slots:
            cached = self.cache.lookup_and_add(tokens) if params.prefix_cache else 0
            due = time.monotonic() + params.prefill_ms(len(tokens) - cached) / 1000.0
            self.active += 1
            try:
                total = params.reasoning_tokens + output_tokens
                for index in range(total):
                    await _sleep_until(due)
                    key = "reasoning_content" if index < params.reasoning_tokens else "content"
                    await send.event({"choices": [{"index": 0, "delta": {key: "w "}}]})
                    due += params.step_ms(self.active, len(tokens) + index) / 1000.0
            finally:
                self.active -= 1
        finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
        await send.event(finish)
        if include_usage and params.send_usage:
            usage = {
                "prompt_tokens": len(tokens),
                "completion_tokens": params.reasoning_tokens + output_tokens,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
            await send.event({"choices": [], "usage": usage})
        await send.raw(b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()


class _EventWriter:
    """Writes SSE events as HTTP chunks, one chunk per event."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def event(self, payload: dict[str, Any]) -> None:
        payload = {"id": "x", "object": "chat.completion.chunk", "model": "indie", **payload}
        await self.raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

    async def raw(self, data: bytes) -> None:
        self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self.writer.drain()


async def _sleep_until(when: float) -> None:
    """Sleep until a monotonic deadline; steps are scheduled on absolute times so the
    event loop's wake-up lag does not accumulate over a response."""
    delay = when - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def serve(params: ServerParams, host: str, port: int) -> None:
    server = IndieServer(params)
    listener = await asyncio.start_server(server.handle, host, port, backlog=1024)
    bound = listener.sockets[0].getsockname()[1]
    print(f"listening on {bound}", flush=True)
    async with listener:
        await listener.serve_forever()


@contextlib.contextmanager
def running(params: ServerParams) -> Iterator[str]:
    """Start the server in its own process on a free port; yield its base URL (`.../v1`)."""
    argv = [sys.executable, "-m", "tests.advisor_tests.indie_server", "--port", "0"]
    process = subprocess.Popen(
        [*argv, "--params", json.dumps(asdict(params))],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            raise RuntimeError(f"indie server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[-1])}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--params", default="{}", help="ServerParams as JSON")
    args = parser.parse_args()
    known = {f.name for f in fields(ServerParams)}
    raw = json.loads(args.params)
    unknown = set(raw) - known
    if unknown:
        parser.error(f"unknown parameters: {sorted(unknown)}")
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(ServerParams(**raw), args.host, args.port))


if __name__ == "__main__":
    main()
