"""The glossary page is generated from the harness's metric definitions."""

from __future__ import annotations

from django.test import Client

from benchmarks.harness.metrics import REQUEST_METRICS
from tests.conftest import TeamWorld


def test_every_request_metric_is_on_the_page(world: TeamWorld, client: Client) -> None:
    client.force_login(world.viewer)
    page = client.get("/glossary/").content.decode()
    for metric in REQUEST_METRICS:
        assert f'id="metric-{metric.name}"' in page, metric.name
    assert "first chunk carrying at least one generated token" in page
