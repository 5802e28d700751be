"""The one access rule for team-owned data: members read, editors write, owners administer.

URLs carry object ids, never a team: `get_for_user` finds the object's team and admits its
members, so a link opens for any member. Outsiders get 404 (the object's existence is not
revealed); members whose role is too low get 403.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.db import models
from django.http import Http404

from accounts.models import Membership, Role, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class Action(enum.Enum):
    READ = "read"
    WRITE = "write"  # create/edit/delete team data, run now, cancel, annotate
    ADMIN = "admin"  # invite, change roles, team settings, rotate keys


ALLOWED: dict[str, frozenset[Action]] = {
    Role.OWNER: frozenset({Action.READ, Action.WRITE, Action.ADMIN}),
    Role.EDITOR: frozenset({Action.READ, Action.WRITE}),
    Role.VIEWER: frozenset({Action.READ}),
}


def role_allows(role: str, action: Action) -> bool:
    return action in ALLOWED.get(role, frozenset())


M = TypeVar("M", bound=models.Model)


class TeamScopedQuerySet(models.QuerySet[M]):
    def for_user(self, user: AbstractBaseUser | AnonymousUser) -> TeamScopedQuerySet[M]:
        if not user.is_authenticated:
            return self.none()
        return self.filter(team__memberships__user=user)

    def for_team(self, team: Team) -> TeamScopedQuerySet[M]:
        return self.filter(team=team)


class TeamScopedManager(models.Manager.from_queryset(TeamScopedQuerySet)):  # type: ignore[misc]
    """The one manager every team-owned model uses."""


class TeamScopedModel(models.Model):
    """Base of every team-owned model: one `team` foreign key, one manager."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")

    objects = TeamScopedManager()

    class Meta:
        abstract = True


def membership_role(user: AbstractBaseUser | AnonymousUser, team: Team) -> str | None:
    if not user.is_authenticated:
        return None
    return (
        Membership.objects.filter(team=team, user_id=user.pk).values_list("role", flat=True).first()
    )


def require(user: AbstractBaseUser | AnonymousUser, team: Team, action: Action) -> str:
    """Return the user's role in `team`, or raise 404 (not a member) / 403 (role too low)."""
    role = membership_role(user, team)
    if role is None:
        raise Http404("No such object")
    if not role_allows(role, action):
        raise PermissionDenied(f"Your role ({role}) cannot do this")
    return role


def team_of(obj: models.Model) -> Team:
    if isinstance(obj, Team):
        return obj
    team = getattr(obj, "team", None)
    if not isinstance(team, Team):
        raise TypeError(f"{type(obj).__name__} is not team-scoped")
    return team


def get_for_user(
    model: type[M] | models.QuerySet[M],
    user: AbstractBaseUser | AnonymousUser,
    *,
    action: Action = Action.READ,
    **lookup: Any,
) -> M:
    """Fetch one team-owned object by `lookup` for `user`, enforcing the role rules."""
    queryset = model if isinstance(model, models.QuerySet) else model._default_manager.all()
    try:
        obj = queryset.get(**lookup)
    except (ObjectDoesNotExist, ValueError):
        raise Http404("No such object") from None
    require(user, team_of(obj), action)
    return obj
