"""Dashboard, glossary and health URLs."""

from __future__ import annotations

from django.urls import path

from core import views

app_name = "core"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("glossary/", views.glossary, name="glossary"),
    path("healthz", views.healthz, name="healthz"),
]
