"""The base layout in a real browser: login, navigation, no request leaves the app, mobile menu."""

from __future__ import annotations

from typing import Any

from accounts.models import User
from accounts.services import team_create


def _login(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", "lead@example.com")
    page.fill("input[name=password]", "pw-lead-12345")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def test_login_and_dashboard_load_nothing_from_outside(
    browser: Any, live_server: Any, tmp_path: Any
) -> None:
    owner = User.objects.create_user("lead@example.com", "pw-lead-12345")
    team_create(name="Inference", owner=owner)
    context = browser.new_context()
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    _login(page, live_server.url)
    nav = page.locator("nav.mainnav")
    assert nav.get_by_role("link", name="Dashboard").is_visible()
    assert page.locator("table").get_by_role("link", name="Inference").is_visible()
    assert page.locator("#team-switch option").all_inner_texts() == ["All my teams", "Inference"]
    # The stylesheet came from the app itself and applied.
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
    outside = [url for url in requested if not url.startswith(live_server.url)]
    assert requested, "the page made no request at all"
    assert not outside, outside
    context.close()


def test_narrow_screen_folds_the_navigation(browser: Any, live_server: Any) -> None:
    owner = User.objects.create_user("lead@example.com", "pw-lead-12345")
    team_create(name="Inference", owner=owner)
    context = browser.new_context(viewport={"width": 375, "height": 740})
    page = context.new_page()
    _login(page, live_server.url)
    dashboard = page.locator("nav.mainnav").get_by_role("link", name="Dashboard")
    assert not dashboard.is_visible()
    page.click("label.nav-toggle-label")
    assert dashboard.is_visible()
    context.close()
