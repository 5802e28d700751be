"""Read typed settings from the environment; a malformed value names its variable."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, *, default: bool) -> bool:
    raw = env_str(name)
    if not raw:
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)"
    )


def env_float(name: str, *, default: float, minimum: float = 0.0) -> float:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = env_str(name)
    if not raw:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_redis_url(name: str) -> str:
    """Return a Redis URL from `name`, or "" when unset; reject anything Celery cannot use."""
    raw = env_str(name)
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in {"redis", "rediss", "redis+socket", "unix"}:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a Redis URL (redis://host:port/db, rediss://..., unix:///path)"
        )
    if parsed.scheme in {"redis", "rediss"}:
        try:
            parsed.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            raise ImproperlyConfigured(f"{name}={raw!r} has a malformed port") from None
        if not parsed.hostname:
            raise ImproperlyConfigured(f"{name}={raw!r} names no host")
    if parsed.scheme == "unix":
        # Celery's Redis transport spells a socket path redis+socket://.
        return "redis+socket://" + parsed.path
    return raw


def dev_secret(var_dir: Path, name: str, make: Callable[[], str]) -> str:
    """A development secret generated once and kept under var/ (debug mode only)."""
    path = var_dir / "dev-secrets" / name
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = make()
    path.write_text(value)
    path.chmod(0o600)
    return value
