"""The advisor's face on `manage.py bench`: what it adds under the table."""

from __future__ import annotations

from typing import Any

from advisor.bench import OPEN_LOOP_CAVEAT, AdvisorExtension
from advisor.core.advise import advise
from advisor.core.workload import Workload
from tests.advisor_tests.synthetic import Truth, synthetic_samples


def _report(rate_per_s: float | None) -> dict[str, Any]:
    samples = synthetic_samples(Truth(slots=4), concurrencies=(1, 4, 16))
    result = advise(samples, workload=Workload(prompt_tokens=1024), resamples=20)
    return {"plan": {"rate_per_s": rate_per_s}, **result.to_report_blocks()}


def test_an_open_loop_run_is_said_to_be_read_as_approximate() -> None:
    closed = AdvisorExtension().summary_lines(_report(None))
    opened = AdvisorExtension().summary_lines(_report(5.0))
    assert OPEN_LOOP_CAVEAT not in closed
    assert opened[-1] == OPEN_LOOP_CAVEAT
    assert opened[:-1] == closed
