"""Project wiring: settings, URLs, the Celery app, WSGI/ASGI entry points."""

from __future__ import annotations

from config.celery_app import app as celery_app

__all__ = ["celery_app"]
