"""Start-up configuration: malformed or missing values stop the app with the variable's name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
GOOD_KEY = "x" * 43 + "="


def _start(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Import the base settings in a fresh interpreter with exactly `env` (plus PATH)."""
    full_env = {
        "PATH": os.environ["PATH"],
        "PHASEWISE_VAR_DIR": str(tmp_path),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", "import config.settings.base"],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


PRODUCTION = {
    "DJANGO_SECRET_KEY": "s" * 50,
    "DJANGO_ALLOWED_HOSTS": "phasewise.example.com",
    "PHASEWISE_ENCRYPTION_KEYS": "YTFTSU5oUk5mWlNoZk1HdlJ2R2ZQb2tQbUJsRmJqRGI=",
}


def test_production_settings_start(tmp_path: Path) -> None:
    result = _start(PRODUCTION, tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", sorted(PRODUCTION))
def test_debug_off_requires_secrets(missing: str, tmp_path: Path) -> None:
    env = {key: value for key, value in PRODUCTION.items() if key != missing}
    result = _start(env, tmp_path)
    assert result.returncode != 0
    assert missing in result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DATABASE_URL", "mysql//nonsense"),
        ("DATABASE_URL", "ftp://example.com/db"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("REDIS_URL", "redis://127.0.0.1:notaport/0"),
        ("DJANGO_DEBUG", "maybe"),
        ("PHASEWISE_TASK_TIME_LIMIT_S", "soon"),
        ("PHASEWISE_ENCRYPTION_KEYS", "not-a-fernet-key"),
    ],
)
def test_malformed_value_names_the_variable(name: str, value: str, tmp_path: Path) -> None:
    result = _start({**PRODUCTION, name: value}, tmp_path)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {name}" in result.stderr or (
        "ImproperlyConfigured" in result.stderr and name in result.stderr
    )


def test_debug_generates_development_keys_once(tmp_path: Path) -> None:
    first = _start({"DJANGO_DEBUG": "1"}, tmp_path)
    assert first.returncode == 0, first.stderr
    secret_files = sorted(p.name for p in (tmp_path / "dev-secrets").iterdir())
    assert secret_files == ["django_secret_key", "phasewise_encryption_keys"]
    before = (tmp_path / "dev-secrets" / "django_secret_key").read_text()
    assert _start({"DJANGO_DEBUG": "1"}, tmp_path).returncode == 0
    assert (tmp_path / "dev-secrets" / "django_secret_key").read_text() == before


def test_no_environment_runs_on_sqlite_and_embedded_redis(tmp_path: Path) -> None:
    code = (
        "from django.conf import settings; import django; django.setup(); "
        "print(settings.DATABASES['default']['ENGINE']); print(settings.CELERY_BROKER_URL)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            "PHASEWISE_VAR_DIR": str(tmp_path),
            "DJANGO_DEBUG": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    engine, broker = result.stdout.split()
    assert engine == "django.db.backends.sqlite3"
    assert broker == f"redis+socket://{tmp_path / 'redis.sock'}"


class TestCelery:
    def test_serialises_json_only(self) -> None:
        assert settings.CELERY_TASK_SERIALIZER == "json"
        assert settings.CELERY_ACCEPT_CONTENT == ["json"]

    def test_acks_late_prefetch_one_no_result_backend(self) -> None:
        from config.celery_app import app

        assert app.conf.task_acks_late is True
        assert app.conf.worker_prefetch_multiplier == 1
        assert app.conf.result_backend is None
        assert app.conf.task_ignore_result is True

    def test_soft_limit_is_nine_tenths_of_hard(self) -> None:
        from config.celery_app import app

        assert app.conf.task_soft_time_limit == pytest.approx(0.9 * app.conf.task_time_limit)

    def test_visibility_timeout_outlasts_the_hard_limit(self) -> None:
        # A shorter visibility timeout hands a long run to a second worker while the first
        # is still measuring: the benchmark runs twice.
        from config.celery_app import app

        options = app.conf.broker_transport_options
        assert options["visibility_timeout"] > app.conf.task_time_limit

    def test_beat_uses_the_database_scheduler(self) -> None:
        from config.celery_app import app

        assert app.conf.beat_scheduler == "django_celery_beat.schedulers:DatabaseScheduler"
        assert "core.tasks.worker_heartbeat_task" in {
            entry["task"] for entry in app.conf.beat_schedule.values()
        }

    def test_benchmark_runs_have_their_own_queue(self) -> None:
        from config.celery_app import app

        router = app.amqp.router
        route = router.route({}, "benchmarks.tasks.run_execute_task")
        assert route["queue"].name == settings.CELERY_QUEUE_RUNS
        light = router.route({}, "core.tasks.worker_heartbeat_task")
        assert light["queue"].name == settings.CELERY_QUEUE_DEFAULT
        assert settings.CELERY_QUEUE_RUNS != settings.CELERY_QUEUE_DEFAULT

    def test_tests_use_their_own_queues_and_key_prefix(self) -> None:
        from config.celery_app import app

        assert settings.CELERY_QUEUE_DEFAULT.startswith("test-")
        prefix = app.conf.broker_transport_options["global_keyprefix"]
        assert prefix.startswith("phasewise-test-")


@pytest.mark.parametrize("command", ["bench", "simulate"])
def test_django_free_commands_run_on_a_fresh_clone(command: str, tmp_path: Path) -> None:
    """No secrets, no database: `manage.py bench --help` works with an empty environment."""
    result = subprocess.run(
        [sys.executable, "manage.py", command, "--help"],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "PHASEWISE_VAR_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "--" in result.stdout
    assert not (tmp_path / "dev-secrets").exists()
