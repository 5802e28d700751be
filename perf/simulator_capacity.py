"""Simulator capacity: chunks per second one server process sustains, and its write lag.

Starts `python -m simulator` pinned to one core with synthetic profiles whose decode step is
50 ms (20 tokens/s per stream), opens N streams from a raw-socket load generator pinned to the
other core, and reads the server's own lag figures (write time minus the step's scheduled end)
from /sim/stats after a warm-up. Bounded: about 30 s per run with the defaults.

    .venv/bin/python perf/simulator_capacity.py --runs 3        # 500 streams over 10 engines
    .venv/bin/python perf/simulator_capacity.py --engines 1     # 500 streams in one batch
    .venv/bin/python perf/simulator_capacity.py --streams 3000  # overload: falling_behind
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEP_MS = 50.0

# A fictional GPU and model sized so that one decode step reads 2 GB at 40 GB/s (50 ms) and the
# KV cache stays negligible: the step time does not drift as contexts grow during the run.
PERF_HARDWARE = {
    "name": "perf-gpu",
    "label": "synthetic 50 GB/s accelerator",
    "kind": "gpu",
    "peak_flops_per_s": {"bf16": 1e15},
    "hbm_bytes_per_s": 50e9,
    "memory_bytes": 1e12,
    "source": "synthetic (perf/simulator_capacity.py)",
}
PERF_MODEL = {
    "name": "perf-model",
    "label": "synthetic 1B model with a tiny KV cache",
    "hf_id": "none",
    "total_params": 1e9,
    "active_params": 1e9,
    "layers": 1,
    "hidden_size": 64,
    "attention_heads": 1,
    "kv_heads": 1,
    "head_dim": 8,
    "context_tokens": 1_000_000,
    "source": "synthetic (perf/simulator_capacity.py)",
}


def profiles(engines: int) -> list[dict[str, object]]:
    return [
        {
            "name": f"perf-{index}",
            "description": "synthetic 50 ms decode step",
            "model": PERF_MODEL,
            "hardware": PERF_HARDWARE,
            "mbu": 0.8,
            "max_batch_size": 4096,
            "max_batched_tokens": 65_536,
            "kv_capacity_tokens": 100_000_000,
            "step_overhead_ms": 0.0,
            "request_overhead_ms": 0.0,
        }
        for index in range(engines)
    ]


def request_bytes(model: str, port: int) -> bytes:
    body = json.dumps(
        {"model": model, "prompt": "go", "max_tokens": 100_000, "ignore_eos": True, "stream": True}
    ).encode()
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class StreamCounter(asyncio.Protocol):
    """Counts SSE events (blank-line terminated) on one connection; nothing else."""

    chunks = 0

    def data_received(self, data: bytes) -> None:
        StreamCounter.chunks += data.count(b"\n\n")


async def load(port: int, engines: int, streams: int) -> list[asyncio.Transport]:
    loop = asyncio.get_running_loop()
    transports = []
    for engine in range(engines):
        # An engine's steps start with its first request: spreading the engines' first requests
        # over one step spreads their step ends, so their write bursts do not coincide.
        started_s = time.perf_counter()
        for _ in range(engine, streams, engines):
            transport, _ = await loop.create_connection(StreamCounter, "127.0.0.1", port)
            transport.write(request_bytes(f"perf-{engine}", port))
            transports.append(transport)
        spacing_s = STEP_MS / 1000.0 / engines
        await asyncio.sleep(max(0.0, spacing_s - (time.perf_counter() - started_s)))
    return transports


def get_json(port: int, path: str, method: str = "GET") -> dict[str, float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path)
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(args: argparse.Namespace, port: int, pid: int) -> dict[str, float]:
    transports = await load(port, args.engines, args.streams)
    await asyncio.sleep(args.warmup_s)
    await asyncio.to_thread(get_json, port, "/sim/stats/reset", "POST")
    start_chunks, start_s, start_cpu_s = StreamCounter.chunks, time.perf_counter(), cpu_seconds(pid)
    await asyncio.sleep(args.duration_s)
    stats = await asyncio.to_thread(get_json, port, "/sim/stats")
    elapsed_s = time.perf_counter() - start_s
    received = StreamCounter.chunks - start_chunks
    server_cpu = (cpu_seconds(pid) - start_cpu_s) / elapsed_s
    for transport in transports:
        transport.close()
    return {
        **stats,
        "server_chunks_per_s": stats["chunks"] / elapsed_s,
        "client_chunks_per_s": received / elapsed_s,
        "server_cpu_share": server_cpu,
    }


def run_once(args: argparse.Namespace, server_core: int, client_core: int) -> dict[str, float]:
    """One fresh server, one measurement; adds the load average seen at its end."""
    with tempfile.TemporaryDirectory() as scratch:
        profile_path = Path(scratch) / "perf-profiles.json"
        profile_path.write_text(json.dumps(profiles(args.engines)))
        server_log = (Path(scratch) / "server.log").open("w+")
        argv = [sys.executable, "-m", "simulator", "--profile", str(profile_path), "--port", "0"]
        server = subprocess.Popen(
            ["taskset", "-c", str(server_core), *argv],
            stdout=subprocess.PIPE,
            stderr=server_log,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip().rsplit(" ", 1)[-1]
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            os.sched_setaffinity(0, {client_core})
            try:
                import uvloop
            except ImportError:
                result = asyncio.run(measure(args, port, server.pid))
            else:
                result = uvloop.run(measure(args, port, server.pid))
        finally:
            server.terminate()
            server.wait(timeout=10)
            server_log.seek(0)
            result_log = server_log.read()
            server_log.close()
    return {
        **result,
        "falling_behind_lines": result_log.count("falling_behind"),
        "load_average": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--engines", type=int, default=10)
    parser.add_argument("--warmup-s", type=float, default=4.0)
    parser.add_argument("--duration-s", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=1, help="repeat; medians are printed")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    print(f"command: {' '.join(sys.argv)}")
    print(
        f"streams {args.streams} over {args.engines} engine(s), step {STEP_MS:.0f} ms, "
        f"measured {args.duration_s:.0f} s after {args.warmup_s:.0f} s warm-up; "
        f"server on core {server_core}, load generator on core {client_core}"
    )
    print(
        "run  chunks/s (server, client)  lag p50 ms  p99 ms  max ms  server CPU  "
        "falling_behind s  load avg"
    )
    results = []
    for run in range(1, args.runs + 1):
        result = run_once(args, server_core, client_core)
        results.append(result)
        print(
            f"{run:>3}  {result['server_chunks_per_s']:>8.0f} {result['client_chunks_per_s']:>8.0f}"
            f"  {result['lag_p50_ms']:>14.2f}  {result['lag_p99_ms']:>6.2f}"
            f"  {result['lag_max_ms']:>6.1f}  {100 * result['server_cpu_share']:>9.0f}%"
            f"  {result['falling_behind_seconds']:>16.0f}  {result['load_average']:>8.2f}"
        )
    if len(results) > 1:
        print(
            "median: "
            + ", ".join(
                f"{key} {statistics.median(r[key] for r in results):.2f}"
                for key in ("server_chunks_per_s", "lag_p50_ms", "lag_p99_ms", "load_average")
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
