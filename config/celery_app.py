"""The Celery application; its settings are the CELERY_* names in config/settings/base.py."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("phasewise")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
