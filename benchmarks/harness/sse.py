"""Incremental server-sent events parser: any line ending, comments, bounded event size."""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.harness.errors import HarnessError


@dataclass(frozen=True, slots=True)
class SSEEvent:
    event: str
    data: str


class SSEParser:
    """Feed bytes as they arrive, get complete events back, in order.

    Lines end in LF, CRLF or CR (a CR at the end of one read may pair with an LF at the start of
    the next). Comments and other fields are skipped. A line or event longer than
    `max_event_bytes` raises `too_large`; data that is not UTF-8 raises `protocol`. Either way
    memory stays below about twice `max_event_bytes`.
    """

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes
        self._partial = b""
        self._after_cr = False
        self._at_start = True
        self._event = b""
        self._data: list[bytes] = []
        self._data_bytes = 0

    def feed(self, data: bytes) -> list[SSEEvent]:
        if not data:
            return []
        if self._after_cr and data[:1] == b"\n":
            data = data[1:]
        self._after_cr = data[-1:] == b"\r"
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if self._partial:
            data = self._partial + data
        if self._at_start and data:
            if len(data) < 3 and b"\xef\xbb\xbf".startswith(data):
                self._partial = data
                return []
            self._at_start = False
            data = data.removeprefix(b"\xef\xbb\xbf")
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > self.max_event_bytes:
            raise HarnessError("too_large", f"an SSE line exceeds {self.max_event_bytes} bytes")
        events: list[SSEEvent] = []
        for line in lines:
            if line:
                self._field(line)
            elif self._data:
                events.append(self._dispatch())
            else:
                self._event = b""
        return events

    def _field(self, line: bytes) -> None:
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data_bytes += len(value) + 1
            if self._data_bytes > self.max_event_bytes:
                raise HarnessError(
                    "too_large", f"an SSE event exceeds {self.max_event_bytes} bytes"
                )
            self._data.append(value)
        elif name == b"event":
            self._event = value[: self.max_event_bytes]
        # Comments (empty name), `id`, `retry` and unknown fields carry nothing we measure.

    def _dispatch(self) -> SSEEvent:
        try:
            event = SSEEvent(
                self._event.decode("utf-8") or "message", b"\n".join(self._data).decode("utf-8")
            )
        except UnicodeDecodeError as exc:
            raise HarnessError("protocol", "an SSE event is not valid UTF-8") from exc
        self._event = b""
        self._data = []
        self._data_bytes = 0
        return event
