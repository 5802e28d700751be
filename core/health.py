"""The checks behind /healthz: database, broker, and the last worker heartbeat."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import redis
from django.conf import settings
from django.db import connection
from django.db.utils import Error as DatabaseError
from django.utils import timezone

from core.models import WorkerHeartbeat


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str


def redis_client(url: str, *, timeout_s: float) -> redis.Redis:
    """A redis-py client for a Celery-style URL (redis+socket:// is a unix socket)."""
    if url.startswith("redis+socket://"):
        url = "unix://" + url.removeprefix("redis+socket://")
    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return Check(ok=False, detail=f"database error: {type(exc).__name__}")
    return Check(ok=True, detail=connection.vendor)


def check_broker() -> Check:
    client = redis_client(settings.REDIS_URL, timeout_s=settings.PHASEWISE_HEALTH_TIMEOUT_S)
    try:
        client.ping()
    except redis.RedisError as exc:
        return Check(ok=False, detail=f"redis unreachable: {type(exc).__name__}")
    finally:
        client.close()
    return Check(ok=True, detail="redis answers")


def check_worker() -> Check:
    latest = WorkerHeartbeat.objects.order_by("-last_seen").first()
    if latest is None:
        return Check(ok=False, detail="no worker heartbeat yet")
    age_s = (timezone.now() - latest.last_seen).total_seconds()
    stale_s = settings.PHASEWISE_WORKER_HEARTBEAT_STALE_S
    if age_s > stale_s:
        return Check(ok=False, detail=f"last heartbeat {age_s:.0f} s ago (limit {stale_s:.0f} s)")
    return Check(ok=True, detail=f"{latest.hostname} seen {age_s:.1f} s ago")


def health_report() -> tuple[bool, dict[str, object]]:
    checks = {"database": check_database(), "broker": check_broker()}
    # Without a database there is no heartbeat to read.
    checks["worker"] = (
        check_worker() if checks["database"].ok else Check(ok=False, detail="database down")
    )
    ok = all(check.ok for check in checks.values())
    return ok, {
        "status": "ok" if ok else "down",
        "checked": timezone.now().isoformat(),
        "checks": {name: asdict(check) for name, check in checks.items()},
    }
