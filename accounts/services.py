"""Writes to teams, memberships and invitations; views and commands call these, never the ORM."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import Invitation, Membership, Role, Team, User, invitation_token_hash


def team_create(*, name: str, owner: User) -> Team:
    name = name.strip()
    if not name:
        raise ValidationError("A team needs a name.")
    with transaction.atomic():
        team = Team.objects.create(name=name)
        Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def invitation_create(
    *, team: Team, role: str, created_by: User, email: str = ""
) -> tuple[Invitation, str]:
    """Create a single-use link valid for PHASEWISE_INVITE_TTL_S; returns it and its token."""
    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}.")
    token = Invitation.new_token()
    invitation = Invitation.objects.create(
        team=team,
        role=role,
        email=email.strip().lower(),
        token_hash=invitation_token_hash(token),
        created_by=created_by,
        expires=timezone.now() + timedelta(seconds=settings.PHASEWISE_INVITE_TTL_S),
    )
    return invitation, token


def invitation_for_token(token: str) -> Invitation | None:
    """The usable (not accepted, not expired) invitation behind `token`, if any."""
    return (
        Invitation.objects.usable()
        .select_related("team")
        .filter(token_hash=invitation_token_hash(token))
        .first()
    )


def invitation_accept(*, token: str, user: User) -> Membership:
    """Join the invitation's team; the link works once. An existing member keeps the higher role."""
    now = timezone.now()
    with transaction.atomic():
        invitation = invitation_for_token(token)
        if invitation is None:
            raise ValidationError("This invitation link is invalid, used or expired.")
        claimed = Invitation.objects.filter(pk=invitation.pk, accepted__isnull=True).update(
            accepted=now, accepted_by=user
        )
        if claimed != 1:
            raise ValidationError("This invitation link is invalid, used or expired.")
        membership, created = Membership.objects.get_or_create(
            team=invitation.team, user=user, defaults={"role": invitation.role}
        )
        order = [Role.VIEWER, Role.EDITOR, Role.OWNER]
        if not created and order.index(Role(invitation.role)) > order.index(Role(membership.role)):
            membership.role = invitation.role
            membership.save(update_fields=["role"])
    return membership


def _ensure_an_owner_remains(membership: Membership) -> None:
    others = Membership.objects.filter(team_id=membership.team_id, role=Role.OWNER).exclude(
        pk=membership.pk
    )
    if membership.role == Role.OWNER and not others.exists():
        raise ValidationError("A team needs at least one owner.")


def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError(f"Unknown role {role!r}.")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        if role != Role.OWNER:
            _ensure_an_owner_remains(membership)
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, membership: Membership) -> None:
    with transaction.atomic():
        membership = Membership.objects.select_for_update().get(pk=membership.pk)
        _ensure_an_owner_remains(membership)
        membership.delete()


def team_update(*, team: Team, name: str, time_zone: str) -> Team:
    team.name = name.strip()
    team.time_zone = time_zone
    team.full_clean()
    team.save(update_fields=["name", "time_zone"])
    return team
