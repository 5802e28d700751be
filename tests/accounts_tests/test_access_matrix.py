"""Every URL, for owner, editor, viewer, outsider and anonymous, built from the URL resolver.

A new URL without an entry in SPECS fails `test_every_url_has_an_access_spec`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.conftest import TeamWorld

ROLES = ["owner", "editor", "viewer", "outsider", "anonymous"]

# Who may use a URL: "public" (anyone), "user" (any logged-in user), or the least team role
# needed: "viewer" (read), "editor" (write), "owner" (administer).
LEVEL_ALLOWS = {
    "public": set(ROLES),
    "user": {"owner", "editor", "viewer", "outsider"},
    "viewer": {"owner", "editor", "viewer"},
    "editor": {"owner", "editor"},
    "owner": {"owner"},
}


@dataclass(frozen=True)
class Spec:
    level: str
    method: str = "get"
    kwargs: Callable[[TeamWorld], dict[str, Any]] = lambda world: {}
    data: Callable[[TeamWorld], dict[str, Any]] = lambda world: {}
    ok: frozenset[int] = field(default_factory=lambda: frozenset({200, 302}))


def _invitation_token(world: TeamWorld) -> dict[str, Any]:
    from accounts.services import invitation_create

    _, token = invitation_create(team=world.team, role="viewer", created_by=world.owner)
    return {"token": token}


def _viewer_membership(world: TeamWorld) -> dict[str, Any]:
    return {"membership_id": world.viewer.memberships.get(team=world.team).pk}


SPECS: dict[str, Spec] = {
    "core:dashboard": Spec("user"),
    "core:healthz": Spec("public", ok=frozenset({200, 503})),
    "core:glossary": Spec("user"),
    "accounts:login": Spec("public"),
    "accounts:logout": Spec("public", method="post"),
    "accounts:password_change": Spec("user"),
    "accounts:password_change_done": Spec("user"),
    "accounts:team_create": Spec("user"),
    "accounts:team_switch": Spec(
        "viewer", method="post", data=lambda world: {"team": world.team.pk}
    ),
    "accounts:team_detail": Spec("viewer", kwargs=lambda world: {"team_id": world.team.pk}),
    "accounts:team_settings": Spec("owner", kwargs=lambda world: {"team_id": world.team.pk}),
    "accounts:invitation_create": Spec(
        "owner",
        method="post",
        kwargs=lambda world: {"team_id": world.team.pk},
        data=lambda world: {"role": "viewer"},
    ),
    "accounts:invitation_accept": Spec("user", kwargs=_invitation_token),
    "accounts:membership_role": Spec(
        "owner", method="post", kwargs=_viewer_membership, data=lambda world: {"role": "editor"}
    ),
    "accounts:membership_remove": Spec("owner", method="post", kwargs=_viewer_membership),
}

# Django's admin has its own staff-only access control, tested in test_admin.py.
EXEMPT_NAMESPACES = {"admin"}


def _url_names(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            namespace = pattern.namespace
            if namespace in EXEMPT_NAMESPACES:
                continue
            yield from _url_names(
                pattern.url_patterns, f"{prefix}{namespace}:" if namespace else prefix
            )
        elif pattern.name:
            yield f"{prefix}{pattern.name}"
        else:
            raise AssertionError(f"URL pattern {pattern.pattern} has no name")


def test_every_url_has_an_access_spec() -> None:
    names = set(_url_names(get_resolver().url_patterns))
    missing = sorted(names - SPECS.keys())
    assert not missing, f"URLs without an access spec: {missing}"
    stale = sorted(SPECS.keys() - names)
    assert not stale, f"specs for URLs that no longer exist: {stale}"


def _expected(spec: Spec, role: str) -> str:
    if role in LEVEL_ALLOWS[spec.level]:
        return "allowed"
    if role == "anonymous":
        return "login"
    return "not_found" if role == "outsider" else "forbidden"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_access(name: str, role: str, world: TeamWorld, client: Client) -> None:
    spec = SPECS[name]
    user = world.user(role)
    if user is not None:
        client.force_login(user)
    url = reverse(name, kwargs=spec.kwargs(world))
    response = getattr(client, spec.method)(url, spec.data(world))
    expected = _expected(spec, role)
    location = response.headers.get("Location", "")
    if expected == "allowed":
        assert response.status_code in spec.ok, (name, role, response.status_code)
        assert "/accounts/login/" not in location or name == "accounts:logout"
    elif expected == "login":
        assert response.status_code == 302, (name, role, response.status_code)
        assert location.startswith(reverse("accounts:login")), location
    elif expected == "not_found":
        assert response.status_code == 404, (name, role, response.status_code)
    else:
        assert response.status_code == 403, (name, role, response.status_code)
