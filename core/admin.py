"""Admin for worker heartbeats."""

from __future__ import annotations

from django.contrib import admin

from core.models import WorkerHeartbeat


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin[WorkerHeartbeat]):
    list_display = ["hostname", "last_seen"]
    readonly_fields = ["hostname", "last_seen"]
