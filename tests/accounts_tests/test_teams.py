"""Teams, invitations and roles as a user meets them."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import Invitation, Membership, Role, Team, User
from tests.conftest import TeamWorld


def _invite(client: Client, world: TeamWorld, role: str) -> str:
    client.force_login(world.owner)
    response = client.post(
        reverse("accounts:invitation_create", args=[world.team.pk]), {"role": role}
    )
    assert response.status_code == 200
    link: str = response.context["link"]
    assert link.startswith("http://testserver/accounts/invitations/")
    return link.removeprefix("http://testserver")


def test_invitation_link_joins_once(world: TeamWorld, client: Client) -> None:
    path = _invite(client, world, "editor")
    newcomer = User.objects.create_user("new@example.com", "pw-new-12345")
    client.force_login(newcomer)
    assert client.get(path).status_code == 200
    response = client.post(path)
    assert response.status_code == 302
    assert Membership.objects.get(team=world.team, user=newcomer).role == Role.EDITOR
    # Single use: a second person with the same link gets nothing.
    second = User.objects.create_user("second@example.com", "pw-second-1234")
    client.force_login(second)
    assert client.post(path).status_code == 404
    assert not Membership.objects.filter(team=world.team, user=second).exists()


def test_expired_invitation_is_refused(world: TeamWorld, client: Client) -> None:
    path = _invite(client, world, "viewer")
    Invitation.objects.update(expires=timezone.now() - timedelta(seconds=1))
    client.force_login(world.outsider)
    assert client.post(path).status_code == 404
    assert not Membership.objects.filter(team=world.team, user=world.outsider).exists()


def test_only_the_token_hash_is_stored(world: TeamWorld, client: Client) -> None:
    path = _invite(client, world, "viewer")
    token = path.rstrip("/").rsplit("/", 1)[-1]
    assert not Invitation.objects.filter(token_hash=token).exists()


def test_accepting_never_lowers_a_role(world: TeamWorld, client: Client) -> None:
    path = _invite(client, world, "viewer")
    client.force_login(world.editor)
    client.post(path)
    assert Membership.objects.get(team=world.team, user=world.editor).role == Role.EDITOR


def test_owner_changes_a_role(world: TeamWorld, client: Client) -> None:
    membership = Membership.objects.get(team=world.team, user=world.viewer)
    client.force_login(world.owner)
    client.post(reverse("accounts:membership_role", args=[membership.pk]), {"role": "editor"})
    membership.refresh_from_db()
    assert membership.role == Role.EDITOR


def test_last_owner_cannot_step_down_or_leave(world: TeamWorld, client: Client) -> None:
    membership = Membership.objects.get(team=world.team, user=world.owner)
    client.force_login(world.owner)
    response = client.post(
        reverse("accounts:membership_role", args=[membership.pk]), {"role": "viewer"}, follow=True
    )
    assert "at least one owner" in response.content.decode()
    client.post(reverse("accounts:membership_remove", args=[membership.pk]))
    membership.refresh_from_db()
    assert membership.role == Role.OWNER


def test_team_switcher_filters_the_dashboard(world: TeamWorld, client: Client) -> None:
    second = Team.objects.create(name="Second team")
    Membership.objects.create(team=second, user=world.viewer, role=Role.VIEWER)
    client.force_login(world.viewer)
    page = client.get(reverse("core:dashboard")).content.decode()
    assert "Latency team" in page
    assert "Second team" in page
    client.post(reverse("accounts:team_switch"), {"team": second.pk})
    rows = client.get(reverse("core:dashboard")).context["memberships"]
    assert [m.team.name for m in rows] == ["Second team"]
    # The switcher only filters lists: the other team's page still opens.
    assert client.get(reverse("accounts:team_detail", args=[world.team.pk])).status_code == 200


def test_team_settings_save_time_zone(world: TeamWorld, client: Client) -> None:
    client.force_login(world.owner)
    client.post(
        reverse("accounts:team_settings", args=[world.team.pk]),
        {"name": "Renamed", "time_zone": "Europe/Berlin"},
    )
    world.team.refresh_from_db()
    assert (world.team.name, world.team.time_zone) == ("Renamed", "Europe/Berlin")


def test_login_by_email_in_any_case(world: TeamWorld, client: Client) -> None:
    response = client.post(
        reverse("accounts:login"), {"username": "Owner@Example.COM", "password": "pw-owner-123"}
    )
    assert response.status_code == 302
    assert client.get(reverse("core:dashboard")).status_code == 200


def test_createteam_command(db: None) -> None:
    User.objects.create_user("lead@example.com", "pw-lead-12345")
    out = StringIO()
    call_command("createteam", "Inference", "--owner", "lead@example.com", stdout=out)
    team = Team.objects.get(name="Inference")
    assert team.memberships.get().role == Role.OWNER
    assert "Inference" in out.getvalue()


def test_createteam_unknown_owner_is_a_clear_error(db: None) -> None:
    with pytest.raises(CommandError, match="No user with email"):
        call_command("createteam", "X", "--owner", "nobody@example.com")


def test_admin_lists_every_model_for_staff(world: TeamWorld, client: Client) -> None:
    from django.apps import apps
    from django.contrib import admin

    ours = {"accounts", "core", "benchmarks", "advisor"}
    for model in apps.get_models():
        if model._meta.app_label in ours:
            assert admin.site.is_registered(model), model
    staff = User.objects.create_superuser("admin@example.com", "pw-admin-12345")
    client.force_login(staff)
    for path in [
        "/admin/accounts/team/",
        "/admin/accounts/membership/",
        "/admin/core/workerheartbeat/",
    ]:
        assert client.get(path).status_code == 200, path
    client.force_login(world.owner)
    assert client.get("/admin/").status_code == 302
