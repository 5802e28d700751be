"""Accounts app: users, teams, memberships with roles, invitations, and the access helper."""

from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"
