"""Template context for the team switcher."""

from __future__ import annotations

from django.http import HttpRequest

from accounts.models import Team


def teams(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    my_teams = list(Team.objects.filter(memberships__user=user))
    active_id = request.session.get("active_team_id")
    active = next((team for team in my_teams if team.pk == active_id), None)
    return {"my_teams": my_teams, "active_team": active}
