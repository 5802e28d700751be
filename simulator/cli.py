"""Command line: `python -m simulator` serves every preset; see `--help`.

Also the body of `python manage.py simulate`, which passes its arguments through unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web

from simulator.profile import PRESETS, Profile, preset_get, profiles_load
from simulator.server import SimServer, configure_event_loop

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8800


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator",
        description="OpenAI-compatible LLM serving simulator grounded in prefill/decode physics.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="0 picks a free port (printed)"
    )
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--preset", action="append", metavar="NAME", help="serve only this preset (repeatable)"
    )
    choice.add_argument(
        "--profile", type=Path, metavar="FILE.json", help="serve the profile(s) in this file"
    )
    choice.add_argument(
        "--list-presets", action="store_true", help="print the presets, one a line, and exit"
    )
    parser.add_argument("--api-key", help="require `Authorization: Bearer KEY` on /v1/")
    parser.add_argument(
        "--ground-truth-log", type=Path, metavar="FILE.jsonl", help="append one line per request"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="real seconds per simulated second (0.01 runs 100x faster; for tests)",
    )
    parser.add_argument(
        "--lag-limit-ms", type=float, default=10.0, help="p99 write lag that logs falling_behind"
    )
    return parser


def profiles_select(args: argparse.Namespace) -> list[Profile]:
    if args.profile is not None:
        return profiles_load(args.profile)
    if args.preset:
        return [preset_get(name) for name in args.preset]
    return list(PRESETS.values())


def preset_lines() -> list[str]:
    width = max(len(name) for name in PRESETS)
    return [f"{name:<{width}}  {profile.description}" for name, profile in PRESETS.items()]


async def serve(server: SimServer, host: str, port: int) -> None:
    """Serve until cancelled; prints the bound URL (the real port when `port` is 0)."""
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_port = runner.addresses[0][1]
    # Startup objects (catalog, presets, aiohttp) never die: keep them out of every collection,
    # which shortens the collector's pauses in the middle of a step's writes.
    gc.collect()
    gc.freeze()
    print(
        f"Simulator serving {len(server.profiles)} model(s) at http://{host}:{bound_port}/v1",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_presets:
        print("\n".join(preset_lines()))
        return 0
    try:
        profiles = profiles_select(args)
        server = SimServer(
            profiles,
            api_key=args.api_key,
            time_scale=args.time_scale,
            ground_truth_path=args.ground_truth_log,
            lag_limit_ms=args.lag_limit_ms,
        )
    except (OSError, ValueError) as error:
        parser.error(str(error))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    configure_event_loop()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(server, args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
