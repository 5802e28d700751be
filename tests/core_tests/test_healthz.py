"""/healthz: database, broker and worker heartbeat, 503 when any is down."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.models import WorkerHeartbeat


@pytest.fixture
def fresh_heartbeat(db: None) -> WorkerHeartbeat:
    return WorkerHeartbeat.objects.create(hostname="worker@test", last_seen=timezone.now())


def test_green_when_everything_answers(client: Client, fresh_heartbeat: WorkerHeartbeat) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "worker"}
    assert all(check["ok"] for check in body["checks"].values())


def test_no_heartbeat_is_503(client: Client, db: None) -> None:
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"]["ok"] is False


def test_stale_heartbeat_is_503(client: Client, fresh_heartbeat: WorkerHeartbeat, settings) -> None:
    fresh_heartbeat.last_seen = timezone.now() - timedelta(
        seconds=settings.PHASEWISE_WORKER_HEARTBEAT_STALE_S + 1
    )
    fresh_heartbeat.save()
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "last heartbeat" in response.json()["checks"]["worker"]["detail"]


def test_broker_down_is_503(client: Client, fresh_heartbeat: WorkerHeartbeat, settings) -> None:
    # A port nothing listens on: the first free port the OS hands out, closed again.
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True


def test_database_down_is_503(client: Client, db: None) -> None:
    from unittest import mock

    from django.db import connection
    from django.db.utils import OperationalError

    class Broken:
        def __enter__(self) -> Broken:
            raise OperationalError("connection refused")

        def __exit__(self, *exc: object) -> None:
            return None

    with mock.patch.object(connection, "cursor", return_value=Broken()):
        response = client.get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] is False
    assert checks["worker"]["ok"] is False
