"""A real `celery worker` process takes a task from Redis and writes its effect to the database."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from core.models import WorkerHeartbeat

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_worker_runs_a_task_enqueued_through_redis() -> None:
    from core.tasks import worker_heartbeat_task

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PHASEWISE_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
    }
    worker = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "config", "worker",
            "--pool=solo", "--without-mingle", "--without-gossip", "--loglevel=INFO",
            "-Q", settings.CELERY_QUEUE_DEFAULT, "-n", "pytest-worker@%h",
        ],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        worker_heartbeat_task.apply_async(headers={"hostname": "ignored"})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # The worker reports itself on start and again when it runs the task.
            names = set(WorkerHeartbeat.objects.values_list("hostname", flat=True))
            if any(name.startswith("pytest-worker@") for name in names):
                break
            assert worker.poll() is None, worker.stdout.read() if worker.stdout else ""
            time.sleep(0.2)
        else:
            pytest.fail("the worker never wrote a heartbeat")
        deadline = time.monotonic() + 60
        task_seen = False
        assert worker.stdout is not None
        os.set_blocking(worker.stdout.fileno(), False)
        log = ""
        while time.monotonic() < deadline and not task_seen:
            log += worker.stdout.read() or ""
            task_seen = "core.tasks.worker_heartbeat_task" in log and "succeeded" in log
            time.sleep(0.2)
        assert task_seen, log
    finally:
        worker.terminate()
        worker.wait(timeout=30)
