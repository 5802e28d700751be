"""`manage.py demo_setup`, which `make run` uses to print a working login."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import Membership, Role


def test_refuses_outside_debug(db: None) -> None:
    with pytest.raises(CommandError, match="DJANGO_DEBUG"):
        call_command("demo_setup")


def test_printed_login_works_and_is_stable(db: None, settings, tmp_path: Path) -> None:
    settings.DEBUG = True
    settings.VAR_DIR = tmp_path
    first, second = StringIO(), StringIO()
    call_command("demo_setup", "--url", "http://127.0.0.1:8123/", stdout=first)
    call_command("demo_setup", stdout=second)
    lines = dict(
        line.strip().split(None, 1) for line in first.getvalue().splitlines() if line.strip()
    )
    assert lines["Open"] == "http://127.0.0.1:8123/"
    assert second.getvalue().count(lines["Password"]) == 1
    membership = Membership.objects.get(user__email=lines["Email"])
    assert membership.role == Role.OWNER
    client = Client()
    response = client.post(
        "/accounts/login/", {"username": lines["Email"], "password": lines["Password"]}
    )
    assert response.status_code == 302
    assert client.get("/").status_code == 200
