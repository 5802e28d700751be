"""Run a simulator inside the current process, on its own thread and event loop (for tests).

with simulator_in_thread(presets=["llama-8b-h100"], time_scale=0.01) as sim:
    client = openai.OpenAI(base_url=sim.base_url, api_key="unused")
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from simulator.profile import PRESETS, Profile, preset_get
from simulator.server import SimServer


@dataclass(frozen=True, slots=True)
class RunningSimulator:
    server: SimServer
    host: str
    port: int

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI `base_url`: the root URL plus /v1."""
        return f"{self.root_url}/v1"


@contextmanager
def simulator_in_thread(
    *,
    presets: Sequence[str] = (),
    profiles: Sequence[Profile] = (),
    api_key: str | None = None,
    time_scale: float = 1.0,
    ground_truth_path: Path | None = None,
    host: str = "127.0.0.1",
) -> Iterator[RunningSimulator]:
    """Serve the given presets and profiles (every preset when both are empty) on a free port."""
    chosen = [preset_get(name) for name in presets] + list(profiles)
    server = SimServer(
        chosen or list(PRESETS.values()),
        api_key=api_key,
        time_scale=time_scale,
        ground_truth_path=ground_truth_path,
    )
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(server.app(), access_log=None)
    ports: list[int] = []
    ready = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, host, 0)
            loop.run_until_complete(site.start())
            ports.append(runner.addresses[0][1])
        except BaseException as error:  # reported to the caller's thread below
            failures.append(error)
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    thread = threading.Thread(target=run, name="simulator", daemon=True)
    thread.start()
    ready.wait(timeout=30)
    if failures or not ports:
        raise RuntimeError("the simulator did not start") from (failures[0] if failures else None)
    try:
        yield RunningSimulator(server=server, host=host, port=ports[0])
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
