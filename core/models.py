"""Worker heartbeats: the health check's evidence that a Celery worker is alive."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class WorkerHeartbeat(models.Model):
    hostname = models.CharField(max_length=255, unique=True)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return f"{self.hostname} at {self.last_seen:%Y-%m-%d %H:%M:%S}"
