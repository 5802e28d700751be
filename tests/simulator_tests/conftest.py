"""A simulator serving every preset in this process, 50x faster than real time."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from simulator.inprocess import RunningSimulator, simulator_in_thread

TIME_SCALE = 0.02


@pytest.fixture(scope="module")
def sim() -> Iterator[RunningSimulator]:
    with simulator_in_thread(time_scale=TIME_SCALE) as running:
        yield running


@pytest.fixture
def client(sim: RunningSimulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.base_url, api_key="unused", max_retries=0, timeout=20)
