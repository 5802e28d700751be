"""Writes for the core app."""

from __future__ import annotations

from django.utils import timezone

from core.models import WorkerHeartbeat


def heartbeat_record(*, hostname: str) -> WorkerHeartbeat:
    heartbeat, _ = WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"last_seen": timezone.now()}
    )
    return heartbeat
