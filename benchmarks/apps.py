"""Benchmarks app: endpoints, prompts, runs and the measurement harness."""

from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmarks"
