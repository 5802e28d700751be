"""Settings for the Django-free command-line tools (`manage.py bench`, `manage.py simulate`).

They touch no database and store no secret, so a fresh clone runs them with no environment:
missing keys get throw-away values for this process only, never written anywhere.
"""

from __future__ import annotations

import os
import secrets

from cryptography.fernet import Fernet

os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "localhost")
os.environ.setdefault("PHASEWISE_ENCRYPTION_KEYS", Fernet.generate_key().decode())

from config.settings.base import *  # noqa: F403
