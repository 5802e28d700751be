"""Forms for teams, invitations and roles."""

from __future__ import annotations

from django import forms

from accounts.models import Role, Team


class TeamCreateForm(forms.Form):
    name = forms.CharField(max_length=100)


class TeamSettingsForm(forms.ModelForm[Team]):
    class Meta:
        model = Team
        fields = ["name", "time_zone"]


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)
    email = forms.EmailField(required=False, help_text="Optional: who the link is meant for.")


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
