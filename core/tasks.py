"""Periodic tasks of the core app (scheduled by Celery beat, see CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

import socket

from celery import Task, shared_task
from celery.signals import worker_ready


@shared_task(bind=True, ignore_result=True)
def worker_heartbeat_task(self: Task[[], None]) -> None:
    from core.services import heartbeat_record

    heartbeat_record(hostname=self.request.hostname or socket.gethostname())


@worker_ready.connect
def heartbeat_on_start(sender: object = None, **kwargs: object) -> None:
    """Report a worker as alive as soon as it starts, not one beat interval later."""
    hostname = getattr(sender, "hostname", None) or socket.gethostname()
    from core.services import heartbeat_record

    heartbeat_record(hostname=str(hostname))
