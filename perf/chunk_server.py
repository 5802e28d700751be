"""Perf ground truth: an OpenAI-style streaming server that logs when it writes every chunk.

One token per chunk at a fixed interval after a fixed first-token delay. `GET /log` returns and
clears the log: per request its nonce, when its body was read, and when each token was written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time

import uvloop

NONCE = re.compile(r"\[request ([0-9a-f]{16})\]")
ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}\n\n'
FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class Server:
    def __init__(self, first_token_s: float, token_interval_s: float) -> None:
        self.first_token_s = first_token_s
        self.token_interval_s = token_interval_s
        self.log: list[dict] = []

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                found = re.search(rb"(?i)content-length: *(\d+)", head)
                length = int(found.group(1)) if found else 0
                body = await reader.readexactly(length)
                received_ns = time.perf_counter_ns()
                if head.startswith(b"GET /log"):
                    data = json.dumps(self.log).encode()
                    self.log = []
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
                    )
                else:
                    await self.stream(json.loads(body), received_ns, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def stream(self, body: dict, received_ns: int, writer: asyncio.StreamWriter) -> None:
        text = "\n".join(m["content"] for m in body["messages"])
        match = NONCE.search(text)
        tokens: list[int] = []
        writer.write(HEAD + chunk(ROLE))
        due_s = time.perf_counter() + self.first_token_s
        for _ in range(int(body.get("max_tokens", 64))):
            await asyncio.sleep(max(0.0, due_s - time.perf_counter()))
            writer.write(chunk(TOKEN))
            tokens.append(time.perf_counter_ns())
            due_s += self.token_interval_s
            await writer.drain()
        usage = {"prompt_tokens": len(text.split()) + 3, "completion_tokens": len(tokens)}
        tail = (
            b"data: %s\n\ndata: [DONE]\n\n" % json.dumps({"choices": [], "usage": usage}).encode()
        )
        writer.write(chunk(FINISH) + chunk(tail) + b"0\r\n\r\n")
        await writer.drain()
        nonce = match.group(1) if match else None
        self.log.append({"id": nonce, "received_ns": received_ns, "token_ns": tokens})


async def main(args: argparse.Namespace) -> None:
    server = Server(args.first_token_ms / 1000, args.token_interval_ms / 1000)
    listener = await asyncio.start_server(server.connection, "127.0.0.1", args.port, backlog=1024)
    print(listener.sockets[0].getsockname()[1], flush=True)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--first-token-ms", type=float, default=8.0)
    parser.add_argument("--token-interval-ms", type=float, default=8.0)
    try:
        uvloop.run(main(parser.parse_args()))
    except KeyboardInterrupt:
        sys.exit(0)
