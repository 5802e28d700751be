"""The one exception type of the harness: a stable error code plus a readable message."""

from __future__ import annotations


class HarnessError(Exception):
    """A failure a user can meet; `code` is one of `metrics.ERROR_CODES`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def http_error_code(status: int) -> str:
    """Map an HTTP status that is not 200 to its stable error code."""
    if status in (401, 403, 429):
        return f"http_{status}"
    return f"http_{status // 100}xx"
