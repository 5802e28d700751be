"""`manage.py createteam NAME --owner EMAIL`: create a team owned by an existing user."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from accounts.services import team_create


class Command(BaseCommand):
    help = "Create a team with the given name, owned by an existing user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the team's name")
        parser.add_argument("--owner", required=True, help="email of an existing user")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            owner = User.objects.get_by_natural_key(options["owner"])
        except User.DoesNotExist:
            raise CommandError(
                f"No user with email {options['owner']!r}; create one first "
                "(python manage.py createsuperuser)"
            ) from None
        team = team_create(name=options["name"], owner=owner)
        self.stdout.write(f"Created team {team.name!r} (id {team.pk}) owned by {owner.email}")
