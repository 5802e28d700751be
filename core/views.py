"""Dashboard and health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from accounts.models import Membership
from core.health import health_report


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    memberships = Membership.objects.filter(user_id=request.user.pk or 0).select_related("team")
    active_id = request.session.get("active_team_id")
    if active_id is not None:
        memberships = memberships.filter(team_id=active_id)
    return render(request, "core/dashboard.html", {"memberships": memberships})


@login_required
def glossary(request: HttpRequest) -> HttpResponse:
    """Every metric's name, unit and definition, from the harness's metric data."""
    from benchmarks.harness.metrics import REPORT_SECTIONS, REQUEST_METRICS

    sections = [
        ("Per request", "What the harness records for every request it sends.", REQUEST_METRICS),
        (
            "Per sweep point",
            "One entry per prompt length x output length x concurrency; percentiles are over "
            "successful requests only.",
            REPORT_SECTIONS["points[]"],
        ),
    ]
    return render(request, "core/glossary.html", {"sections": sections})


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    ok, report = health_report()
    return JsonResponse(report, status=200 if ok else 503)
