"""Timing fidelity and client cost of the harness against a bare reader and the openai SDK.

Server (perf/chunk_server.py) on core 0, each client on core 1; clients alternate, 5 runs each.
Error = the client's measured value - the server's logged ground truth, per request; p50 quoted.
Usage: .venv/bin/python perf/harness_timing.py --streams 1,16,64 [--runs 5] [--requests 4]
[--clients bare,harness,sdk,httpx] (httpx: httpx2 without the SDK, for the reader's rationale)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CLIENTS = ("bare", "harness", "sdk")
PROMPT_WORDS = 190  # about 200 prompt tokens with the chunk server's one-token-per-word count


def start_server(first_token_ms: float, interval_ms: float) -> tuple[subprocess.Popen[str], int]:
    command = [PYTHON, "perf/chunk_server.py", "--first-token-ms", str(first_token_ms),
               "--token-interval-ms", str(interval_ms)]  # fmt: skip
    server = subprocess.Popen(
        ["taskset", "-c", "0", *command], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, int(server.stdout.readline())


def server_log(port: int) -> dict[str, dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/log", timeout=30) as response:
        return {entry["id"]: entry for entry in json.loads(response.read()) if entry["id"]}


def run_client(kind: str, port: int, streams: int, requests: int) -> dict:
    if kind == "bare":
        command = [PYTHON, "perf/bare_reader.py"]
    else:
        command = [PYTHON, "perf/harness_timing.py", "--client", kind]
    options = ["--port", str(port), "--streams", str(streams), "--requests", str(requests)]
    done = subprocess.run(["taskset", "-c", "1", *command, *options], cwd=ROOT, capture_output=True,
                          text=True, timeout=170, check=True)  # fmt: skip
    return json.loads(done.stdout)


def errors(client: dict, log: dict[str, dict]) -> dict[str, float]:
    ttft_errors, tpot_errors, chunks = [], [], 0
    for request in client["requests"]:
        truth = log[request["id"]]
        tokens = truth["token_ns"]
        ttft_errors.append(request["ttft_ms"] - (tokens[0] - truth["received_ns"]) / 1e6)
        tpot_errors.append(request["tpot_ms"] - (tokens[-1] - tokens[0]) / 1e6 / (len(tokens) - 1))
        chunks += request["chunks"]
    chunks = client.get("all_chunks", chunks)
    return {
        "ttft_error_ms": statistics.median(ttft_errors),
        "tpot_error_ms": statistics.median(tpot_errors),
        "cpu_ms_per_chunk": client["cpu_s"] * 1000 / chunks,
        "chunks_per_s": chunks / client["wall_s"],
        "valid": float(client.get("valid", True)),
    }


def measure(args: argparse.Namespace) -> None:
    server, port = start_server(args.first_token_ms, args.interval_ms)
    try:
        for streams in args.streams:
            requests = args.requests or max(1, 8 // streams + 1)
            runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in args.clients}
            for _ in range(args.runs):
                for kind in args.clients:
                    client = run_client(kind, port, streams, requests)
                    runs[kind].append(errors(client, server_log(port)))
            for kind in args.clients:
                medians = {
                    key: statistics.median(run[key] for run in runs[kind]) for key in runs[kind][0]
                }
                figures = " | ".join(f"{medians[key]:.3f}" for key in medians)
                print(f"| {streams} | {kind} | {requests * streams} | {figures} |", flush=True)
    finally:
        server.terminate()


# --- Clients (run in their own process, pinned by `run_client`). ---


def harness_client(args: argparse.Namespace) -> dict:
    sys.path.insert(0, str(ROOT))
    from benchmarks.harness.config import EndpointConfig, Thresholds
    from benchmarks.harness.plan import Plan, Workload
    from benchmarks.harness.sweep import BenchConfig, run_bench

    prompt = ({"role": "user", "content": "word " * (PROMPT_WORDS - 12)},)
    config = BenchConfig(
        endpoint=EndpointConfig(base_url=f"http://127.0.0.1:{args.port}/v1", model="m"),
        plan=Plan(
            prompt_tokens=(200,),
            output_tokens=(64,),
            concurrency=(args.streams,),
            requests_per_point=args.streams * args.requests,
            warmup_per_point=0,
        ),
        workload=Workload(prompts=(prompt,)),
        thresholds=Thresholds(min_samples=1),
        check_endpoint=False,
    )
    before, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    report, records = run_bench(config)
    after, wall_s = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
    measured = [r for r in records if r.purpose == "sweep" and r.outcome == "success"]
    return {
        "requests": [
            {
                "id": (r.nonce or "").split()[1].rstrip("]"),
                "ttft_ms": r.ttft_ms,
                "tpot_ms": r.tpot_ms,
                "chunks": len(r.chunk_offsets_us),
            }
            for r in measured
        ],
        "all_chunks": sum(len(r.chunk_offsets_us) for r in records),
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "wall_s": wall_s,
        "valid": report["valid"],
    }


async def sdk_streams(args: argparse.Namespace) -> list[dict]:
    import httpx2
    import openai

    limits = httpx2.Limits(max_connections=args.streams, max_keepalive_connections=args.streams)
    http_client = httpx2.AsyncClient(trust_env=False, limits=limits, timeout=60)
    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{args.port}/v1", api_key="x",
                                max_retries=0, http_client=http_client)  # fmt: skip
    out: list[dict] = []

    async def one_stream() -> None:
        for _ in range(args.requests):
            rid = uuid.uuid4().hex[:16]
            content = f"[request {rid}]\n" + "word " * PROMPT_WORDS
            sent = time.perf_counter_ns()
            stream = await client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": content}],
                max_tokens=64,
                stream=True,
            )
            tokens = []
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    tokens.append(time.perf_counter_ns())
            ttft_ms, e2e_ms = (tokens[0] - sent) / 1e6, (tokens[-1] - sent) / 1e6
            tpot_ms = (e2e_ms - ttft_ms) / (len(tokens) - 1)
            out.append({"id": rid, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "chunks": len(tokens)})

    await asyncio.gather(*(one_stream() for _ in range(args.streams)))
    await client.close()
    return out


async def httpx_streams(args: argparse.Namespace) -> list[dict]:
    """httpx2 (what the SDK uses) without the SDK: a streamed POST read with aiter_lines."""
    import httpx2

    limits = httpx2.Limits(max_connections=args.streams, max_keepalive_connections=args.streams)
    client = httpx2.AsyncClient(trust_env=False, limits=limits, timeout=60)
    url = f"http://127.0.0.1:{args.port}/v1/chat/completions"
    out: list[dict] = []

    async def one_stream() -> None:
        for _ in range(args.requests):
            rid = uuid.uuid4().hex[:16]
            content = f"[request {rid}]\n" + "word " * PROMPT_WORDS
            body = {"model": "m", "stream": True, "max_tokens": 64,
                    "messages": [{"role": "user", "content": content}]}  # fmt: skip
            tokens = []
            sent = time.perf_counter_ns()
            async with client.stream("POST", url, json=body) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    choices = json.loads(line[6:])["choices"]
                    if choices and choices[0]["delta"].get("content"):
                        tokens.append(time.perf_counter_ns())
            ttft_ms, e2e_ms = (tokens[0] - sent) / 1e6, (tokens[-1] - sent) / 1e6
            tpot_ms = (e2e_ms - ttft_ms) / (len(tokens) - 1)
            out.append({"id": rid, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "chunks": len(tokens)})

    await asyncio.gather(*(one_stream() for _ in range(args.streams)))
    await client.aclose()
    return out


def library_client(args: argparse.Namespace) -> dict:
    import uvloop

    streams = sdk_streams if args.client == "sdk" else httpx_streams
    before, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = uvloop.run(streams(args))
    after, wall_s = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
    cpu_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"requests": out, "cpu_s": cpu_s, "wall_s": wall_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", choices=("harness", "sdk", "httpx"))
    parser.add_argument("--port", type=int)
    parser.add_argument(
        "--streams", type=lambda text: [int(v) for v in text.split(",")], default=[1]
    )
    parser.add_argument("--requests", type=int, default=0, help="per stream; 0: about 8 per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clients", type=lambda text: text.split(","), default=list(CLIENTS))
    parser.add_argument("--first-token-ms", type=float, default=8.0)
    parser.add_argument("--interval-ms", type=float, default=8.0)
    args = parser.parse_args()
    if args.client:
        args.streams = args.streams[0]
        result = harness_client(args) if args.client == "harness" else library_client(args)
        json.dump(result, sys.stdout)
        return
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    columns = "TTFT p50 error ms | TPOT p50 error ms | CPU ms/chunk | chunks/s | valid"
    print(f"| streams | client | requests/run | {columns} |")
    measure(args)


if __name__ == "__main__":
    main()
