"""Django-free measurement harness: streaming client, load generator, sweeps and the JSON report.

Everything here runs from a plain script; see `benchmarks.harness.cli` and `run_bench`.
"""

from __future__ import annotations

HARNESS_VERSION = "1.0.0"
