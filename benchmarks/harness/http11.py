"""A small HTTP/1.1 response reader on asyncio streams: the timed path of every request.

Not httpx: at 64 streams httpx2 streaming cost 0.10 CPU-ms per chunk and added 44 ms to TTFT p50;
this reader 0.04 ms and 1.5 ms, the bare reference 1.3 ms (docs/performance.md, `## Harness`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from benchmarks.harness.errors import HarnessError

READ_SIZE_BYTES = 64 * 1024
_MAX_CHUNK_LINE_BYTES = 1024


@dataclass(frozen=True)
class ResponseHead:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "

    @property
    def keep_alive(self) -> bool:
        return "close" not in self.headers.get("connection", "").lower()

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


def parse_head(raw: bytes) -> ResponseHead:
    """Parse a status line and headers (ending in a blank line); raise `protocol` if malformed."""
    try:
        text = raw.decode("latin-1")
        status_line, *header_lines = text.rstrip("\r\n").split("\r\n")
        version, status_text, *reason = status_line.split(" ", 2)
        if not version.startswith("HTTP/1."):
            raise ValueError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        status = int(status_text)
    except ValueError as exc:
        raise HarnessError("protocol", f"malformed response head: {exc}") from exc
    headers: dict[str, str] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise HarnessError("protocol", f"malformed header line {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return ResponseHead(status, reason[0] if reason else "", headers)


async def read_head(reader: asyncio.StreamReader) -> ResponseHead:
    """Read one final response head, skipping 1xx interim responses."""
    while True:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError as exc:
            raise HarnessError("too_large", "response head exceeds the reader's limit") from exc
        except asyncio.IncompleteReadError as exc:
            message = "the server closed the connection before sending a response"
            raise HarnessError("disconnected", message) from exc
        head = parse_head(raw)
        if head.status >= 200:
            return head


class ChunkedDecoder:
    """Incremental decoder of `Transfer-Encoding: chunked`; `done` after the last chunk."""

    def __init__(self) -> None:
        self._buffer = b""
        self._remaining = 0  # data bytes left in the current chunk, then its CRLF
        self._in_data = False
        self._in_trailers = False
        self.done = False

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        out: list[bytes] = []
        position = 0
        while not self.done:
            if self._in_data:
                available = len(buffer) - position
                if available < self._remaining + 2:
                    take = min(available, self._remaining)
                    out.append(buffer[position : position + take])
                    self._remaining -= take
                    position += take
                    break
                end = position + self._remaining
                out.append(buffer[position:end])
                if buffer[end : end + 2] != b"\r\n":
                    raise HarnessError("protocol", "chunk data is not followed by CRLF")
                position = end + 2
                self._remaining = 0
                self._in_data = False
                continue
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                if len(buffer) - position > _MAX_CHUNK_LINE_BYTES:
                    raise HarnessError("protocol", "chunk size line too long")
                break
            line = buffer[position:line_end]
            position = line_end + 2
            if self._in_trailers:
                self.done = not line
                continue
            self._remaining = _chunk_size(line)
            self._in_data = self._remaining > 0
            self._in_trailers = self._remaining == 0
        self._buffer = buffer[position:]
        if self.done and self._buffer:
            raise HarnessError("protocol", "bytes after the last chunk")
        return b"".join(out)


def _chunk_size(line: bytes) -> int:
    size_text = line.split(b";", 1)[0].strip()
    try:
        if not size_text or size_text.startswith((b"-", b"+", b"0x")):
            raise ValueError(size_text)
        return int(size_text, 16)
    except ValueError as exc:
        raise HarnessError("protocol", f"bad chunk size {line[:40]!r}") from exc


class BodyReader:
    """Reads a response body by its framing: chunked, Content-Length or until close.

    `read()` returns the next decoded bytes, `b""` once the body is complete. `reusable` says
    whether the connection may carry another request afterwards.
    """

    def __init__(self, reader: asyncio.StreamReader, head: ResponseHead, max_bytes: int) -> None:
        self._reader = reader
        self._max_bytes = max_bytes
        self.received_bytes = 0
        self.complete = False
        encoding = head.headers.get("transfer-encoding", "").lower()
        self._chunked = ChunkedDecoder() if "chunked" in encoding else None
        length = head.headers.get("content-length")
        self._remaining: int | None = None
        if self._chunked is None and length is not None:
            if not length.isdigit():
                raise HarnessError("protocol", f"bad Content-Length {length[:40]!r}")
            self._remaining = int(length)
            self.complete = self._remaining == 0
        self._keep_alive = head.keep_alive and (self._chunked or self._remaining is not None)

    @property
    def reusable(self) -> bool:
        return bool(self.complete and self._keep_alive)

    async def read(self) -> bytes:
        while not self.complete:
            size = (
                READ_SIZE_BYTES
                if self._remaining is None
                else min(self._remaining, READ_SIZE_BYTES)
            )
            data = await self._reader.read(size)
            if not data:
                return self._on_eof()
            self.received_bytes += len(data)
            if self.received_bytes > self._max_bytes:
                raise HarnessError("too_large", f"response body exceeds {self._max_bytes} bytes")
            if self._chunked is not None:
                data = self._chunked.feed(data)
                self.complete = self._chunked.done
            elif self._remaining is not None:
                self._remaining -= len(data)
                self.complete = self._remaining == 0
            if data:
                return data
        return b""

    def _on_eof(self) -> bytes:
        if self._chunked is None and self._remaining is None:
            self.complete = True  # close-delimited: EOF is the end of the body
            return b""
        raise HarnessError("disconnected", "the connection closed in the middle of the body")

    async def read_all(self, limit_bytes: int) -> bytes:
        """The rest of the body, at most `limit_bytes` of it (for error responses)."""
        parts: list[bytes] = []
        size = 0
        while size < limit_bytes and (data := await self.read()):
            parts.append(data)
            size += len(data)
        return b"".join(parts)[:limit_bytes]
