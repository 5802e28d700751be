"""`manage.py demo_setup`: the demo user and team that `make run` prints a login for."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from accounts.models import Membership, Role, Team, User
from accounts.services import team_create

DEMO_EMAIL = "demo@phasewise.local"
DEMO_TEAM = "Demo team"


class Command(BaseCommand):
    help = "Create (once) a demo user owning a demo team, and print how to log in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="URL to print")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError("demo_setup only runs with DJANGO_DEBUG=1 (local use)")
        password_file = settings.VAR_DIR / "demo-password"
        if not password_file.exists():
            password_file.write_text(secrets.token_urlsafe(12))
            password_file.chmod(0o600)
        password = password_file.read_text().strip()
        with transaction.atomic():
            user = User.objects.filter(email=DEMO_EMAIL).first()
            if user is None:
                user = User.objects.create_user(DEMO_EMAIL, password, name="Demo")
            elif not user.check_password(password):
                user.set_password(password)
                user.save(update_fields=["password"])
            if not Membership.objects.filter(user=user, team__name=DEMO_TEAM).exists():
                team_create(name=DEMO_TEAM, owner=user)
        teams = Team.objects.filter(memberships__user=user, memberships__role=Role.OWNER)
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "  Phasewise is starting.",
                    f"  Open      {options['url']}",
                    f"  Email     {DEMO_EMAIL}",
                    f"  Password  {password}",
                    f"  Teams     {', '.join(team.name for team in teams)}",
                    "  Stop      Ctrl-C",
                    "",
                ]
            )
        )
