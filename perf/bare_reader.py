"""Reference client for perf/harness_timing.py: a bare asyncio SSE reader on uvloop.

No HTTP library, no parser class. Committed before any harness figure; never changed after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
import uuid

import uvloop

HEAD = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n"


def request(args: argparse.Namespace, rid: str) -> bytes:
    text = f"[request {rid}]\n" + "word " * args.words
    messages = [{"role": "user", "content": text}]
    body = {"model": "m", "stream": True, "max_tokens": args.output_tokens, "messages": messages}
    raw = json.dumps(body).encode()
    return HEAD.format(len(raw)).encode() + raw


async def stream(args: argparse.Namespace, out: list[dict]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
    for _ in range(args.requests):
        rid = uuid.uuid4().hex[:16]
        writer.write(request(args, rid))
        await writer.drain()
        sent = time.perf_counter_ns()
        tokens: list[int] = []
        buf, done = b"", False
        while not (done and buf.endswith(b"\r\n0\r\n\r\n")):
            data = await reader.read(65536)
            now = time.perf_counter_ns()
            if not data:
                raise ConnectionError("server closed")
            *events, buf = (buf + data).split(b"\n\n")
            for event in events:
                payload = event[event.find(b"data: ") + 6 :]
                if payload == b"[DONE]":
                    done = True
                    continue
                choices = json.loads(payload)["choices"]
                if choices and choices[0]["delta"].get("content"):
                    tokens.append(now)
        ttft_ms, e2e_ms = (tokens[0] - sent) / 1e6, (tokens[-1] - sent) / 1e6
        tpot_ms = (e2e_ms - ttft_ms) / (len(tokens) - 1)
        out.append({"id": rid, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "chunks": len(tokens)})
    writer.close()


async def main(args: argparse.Namespace) -> None:
    out: list[dict] = []
    usage0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    await asyncio.gather(*(stream(args, out) for _ in range(args.streams)))
    usage1, wall_s = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
    cpu_s = usage1.ru_utime - usage0.ru_utime + usage1.ru_stime - usage0.ru_stime
    json.dump({"requests": out, "cpu_s": cpu_s, "wall_s": wall_s}, sys.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--requests", type=int, default=5, help="per stream")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--words", type=int, default=190, help="about 200 prompt tokens")
    uvloop.run(main(parser.parse_args()))
