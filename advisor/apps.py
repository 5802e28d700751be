"""Advisor app: the latency-model fit, diagnosis and recommendations."""

from __future__ import annotations

from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "advisor"
