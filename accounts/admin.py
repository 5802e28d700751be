"""Admin for users, teams, memberships and invitations."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from accounts.models import Invitation, Membership, Team, User


@admin.register(User)
class UserAdmin(BaseUserAdmin):  # type: ignore[type-arg]  # stubs demand AbstractUser
    ordering = ["email"]
    list_display = ["email", "name", "is_staff", "is_active", "created"]
    search_fields = ["email", "name"]
    fieldsets = (
        (None, {"fields": ("email", "password", "name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


class MembershipInline(admin.TabularInline[Membership, Team]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin[Team]):
    list_display = ["name", "time_zone", "created"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["team", "user", "role", "created"]
    list_filter = ["role"]
    autocomplete_fields = ["team", "user"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin[Invitation]):
    list_display = ["team", "role", "email", "created", "expires", "accepted"]
    list_filter = ["role"]
    readonly_fields = ["token_hash", "accepted", "accepted_by"]
