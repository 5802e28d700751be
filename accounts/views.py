"""Team pages: create, view, settings, invitations, roles, and the team switcher."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services
from accounts.access import Action, get_for_user, require
from accounts.forms import InvitationForm, RoleForm, TeamCreateForm, TeamSettingsForm
from accounts.models import Membership, Role, Team, User

ACTIVE_TEAM_SESSION_KEY = "active_team_id"


def _user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


@login_required
@require_http_methods(["GET", "POST"])
def team_create(request: HttpRequest) -> HttpResponse:
    form = TeamCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = services.team_create(name=form.cleaned_data["name"], owner=_user(request))
        request.session[ACTIVE_TEAM_SESSION_KEY] = team.pk
        messages.success(request, f"Team “{team.name}” created. You are its owner.")
        return redirect("accounts:team_detail", team_id=team.pk)
    return render(request, "accounts/team_create.html", {"form": form})


@login_required
def team_detail(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_for_user(Team, request.user, pk=team_id)
    role = require(request.user, team, Action.READ)
    context = {
        "team": team,
        "role": role,
        "is_owner": role == Role.OWNER,
        "memberships": team.memberships.select_related("user"),
        "invitations": team.invitations.usable() if role == Role.OWNER else [],
        "invitation_form": InvitationForm(),
        "role_choices": Role.choices,
    }
    return render(request, "accounts/team_detail.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def team_settings(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_for_user(Team, request.user, action=Action.ADMIN, pk=team_id)
    form = TeamSettingsForm(request.POST or None, instance=team)
    if request.method == "POST" and form.is_valid():
        services.team_update(
            team=team, name=form.cleaned_data["name"], time_zone=form.cleaned_data["time_zone"]
        )
        messages.success(request, "Team settings saved.")
        return redirect("accounts:team_detail", team_id=team.pk)
    return render(request, "accounts/team_settings.html", {"team": team, "form": form})


@login_required
@require_POST
def invitation_create(request: HttpRequest, team_id: int) -> HttpResponse:
    team = get_for_user(Team, request.user, action=Action.ADMIN, pk=team_id)
    form = InvitationForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role for the invitation.")
        return redirect("accounts:team_detail", team_id=team.pk)
    _, token = services.invitation_create(
        team=team,
        role=form.cleaned_data["role"],
        email=form.cleaned_data["email"],
        created_by=_user(request),
    )
    link = request.build_absolute_uri(reverse("accounts:invitation_accept", args=[token]))
    return render(request, "accounts/invitation_created.html", {"team": team, "link": link})


@login_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    invitation = services.invitation_for_token(token)
    if invitation is None:
        return render(request, "accounts/invitation_invalid.html", status=404)
    if request.method == "POST":
        try:
            membership = services.invitation_accept(token=token, user=_user(request))
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
            return render(request, "accounts/invitation_invalid.html", status=404)
        request.session[ACTIVE_TEAM_SESSION_KEY] = membership.team_id
        messages.success(request, f"You joined “{membership.team.name}” as {membership.role}.")
        return redirect("accounts:team_detail", team_id=membership.team_id)
    return render(request, "accounts/invitation_accept.html", {"invitation": invitation})


@login_required
@require_POST
def membership_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = get_for_user(Membership, request.user, action=Action.ADMIN, pk=membership_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        try:
            services.membership_set_role(membership=membership, role=form.cleaned_data["role"])
            messages.success(request, f"{membership.user} is now {form.cleaned_data['role']}.")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
    else:
        messages.error(request, "Unknown role.")
    return redirect("accounts:team_detail", team_id=membership.team_id)


@login_required
@require_POST
def membership_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = get_for_user(Membership, request.user, action=Action.ADMIN, pk=membership_id)
    try:
        services.membership_remove(membership=membership)
        messages.success(request, f"{membership.user} left the team.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("accounts:team_detail", team_id=membership.team_id)


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    """Filter lists to one team (or all teams); it grants nothing."""
    raw = request.POST.get("team", "")
    if raw == "":
        request.session.pop(ACTIVE_TEAM_SESSION_KEY, None)
    else:
        team = get_for_user(Team, request.user, pk=raw)
        request.session[ACTIVE_TEAM_SESSION_KEY] = team.pk
    target = request.POST.get("next", "")
    if not target.startswith("/") or target.startswith("//"):
        target = reverse("core:dashboard")
    return HttpResponseRedirect(target)
