"""Login, password and team URLs."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(success_url="/accounts/password/done/"),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("teams/new/", views.team_create, name="team_create"),
    path("teams/switch/", views.team_switch, name="team_switch"),
    path("teams/<int:team_id>/", views.team_detail, name="team_detail"),
    path("teams/<int:team_id>/settings/", views.team_settings, name="team_settings"),
    path("teams/<int:team_id>/invitations/", views.invitation_create, name="invitation_create"),
    path("invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
    path("memberships/<int:membership_id>/role/", views.membership_role, name="membership_role"),
    path(
        "memberships/<int:membership_id>/remove/",
        views.membership_remove,
        name="membership_remove",
    ),
]
