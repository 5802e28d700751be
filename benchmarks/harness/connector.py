"""Every outbound connection of the harness: resolve, ask the address policy, connect, verify TLS.

Also the only place that builds the `openai` SDK client (connection check and `models.list()`).
Proxy environment variables are ignored and redirects are never followed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.harness.errors import HarnessError, http_error_code
from benchmarks.harness.policy import AddressPolicy, IPAddress

if TYPE_CHECKING:
    import httpcore2
    import openai

HEAD_LIMIT_BYTES = 64 * 1024
KEEPALIVE_EXPIRY_S = 4.0  # below the 5 s keep-alive most servers use


@dataclass(frozen=True)
class Origin:
    """Scheme, host and port of an endpoint plus the path prefix of its API (`/v1`)."""

    scheme: str
    host: str
    port: int
    base_path: str

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self.tls else 80
        return host if self.port == default_port else f"{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.host_header}{self.base_path}"


def parse_base_url(url: str) -> Origin:
    """Parse `http(s)://host[:port][/path]`; raise `HarnessError("usage")` otherwise."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HarnessError("usage", f"base URL must be http:// or https:// with a host: {url!r}")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise HarnessError("usage", "base URL must not carry credentials, a query or a fragment")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise HarnessError("usage", f"bad port in base URL {url!r}") from exc
    return Origin(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


def checked_addresses(
    host: str, port: int, infos: Iterable[tuple[Any, ...]], policy: AddressPolicy
) -> list[IPAddress]:
    """The resolved addresses the policy allows, in resolver order; refuse when none is left."""
    allowed: list[IPAddress] = []
    refusals: list[str] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address in allowed:
            continue
        reason = policy.refusal(host=host, address=address, port=port)
        if reason is None:
            allowed.append(address)
        else:
            refusals.append(reason)
    if not allowed:
        detail = "; ".join(refusals) or "the name resolved to no address"
        raise HarnessError("blocked_by_policy", f"refused by the address policy: {detail}")
    return allowed


def default_ssl_context(ca_file: str | None = None) -> ssl.SSLContext:
    """Certificate and hostname verification on; `ca_file` adds a private CA."""
    context = ssl.create_default_context(cafile=ca_file)
    context.check_hostname = True
    context.verify_mode = ssl.CERT_REQUIRED
    return context


@dataclass(eq=False)
class Connection:
    """One HTTP/1.1 connection; `connect_ms` is TCP connect plus TLS handshake."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    connect_ms: float
    idle_since_s: float = field(default_factory=time.monotonic)

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since_s < KEEPALIVE_EXPIRY_S
        return fresh and not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Connector:
    """Opens, pools and reuses connections to one origin under an address policy."""

    def __init__(
        self, origin: Origin, *, policy: AddressPolicy, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.origin = origin
        self.policy = policy
        self.ssl_context = ssl_context or (default_ssl_context() if origin.tls else None)
        self._idle: list[Connection] = []

    async def acquire(self) -> tuple[Connection, bool]:
        """A pooled connection if one is usable, else a new one; the flag says which."""
        while self._idle:
            connection = self._idle.pop()
            if connection.usable():
                return connection, False
            connection.close()
        return await self.open(), True

    def release(self, connection: Connection, *, reusable: bool) -> None:
        if reusable and not connection.writer.is_closing():
            connection.idle_since_s = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    async def open(self) -> Connection:
        """Resolve, check every address with the policy, connect to the first allowed one."""
        loop = asyncio.get_running_loop()
        origin = self.origin
        try:
            infos = await loop.getaddrinfo(
                origin.host, origin.port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
        except OSError as exc:
            raise HarnessError("connect", f"cannot resolve {origin.host}: {exc}") from exc
        last_error: HarnessError | None = None
        for address in checked_addresses(origin.host, origin.port, infos, self.policy):
            try:
                return await self._connect(str(address))
            except HarnessError as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def _connect(self, address: str) -> Connection:
        started_ns = time.perf_counter_ns()
        try:
            reader, writer = await asyncio.open_connection(
                address,
                self.origin.port,
                ssl=self.ssl_context,
                server_hostname=self.origin.host if self.ssl_context else None,
                limit=HEAD_LIMIT_BYTES,
            )
        except ssl.SSLError as exc:
            raise HarnessError("tls", f"TLS with {self.origin.host} failed: {exc}") from exc
        except OSError as exc:
            message = f"cannot connect to {address} port {self.origin.port}: {exc}"
            raise HarnessError("connect", message) from exc
        connect_ms = (time.perf_counter_ns() - started_ns) / 1e6
        return Connection(reader, writer, connect_ms)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


# --- The openai SDK, for the untimed connection check and model discovery only. ---


def _guarded_backend(policy: AddressPolicy) -> httpcore2.NetworkBackend:
    import httpcore2

    class GuardedBackend(httpcore2.NetworkBackend):
        """httpcore2 backend that connects only to addresses the policy allows."""

        def __init__(self) -> None:
            self._inner = httpcore2.SyncBackend()

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> httpcore2.NetworkStream:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from exc
            addresses = checked_addresses(host, port, infos, policy)
            errors: list[Exception] = []
            for address in addresses:
                try:
                    return self._inner.connect_tcp(
                        str(address), port, timeout, local_address, socket_options
                    )
                except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                    errors.append(exc)
            raise errors[-1]

    return GuardedBackend()


def guarded_http_client(
    policy: AddressPolicy, *, ssl_context: ssl.SSLContext, timeout_s: float
) -> Any:
    """An `httpx2.Client` connecting only where the policy allows; no proxies, no redirects."""
    import httpcore2
    import httpx2

    transport = httpx2.HTTPTransport(verify=ssl_context, trust_env=False)
    # httpx2 builds its pool privately; swap in one on the guarded backend.
    transport._pool = httpcore2.ConnectionPool(
        ssl_context=ssl_context, max_connections=4, network_backend=_guarded_backend(policy)
    )
    return httpx2.Client(
        transport=transport, trust_env=False, follow_redirects=False, timeout=timeout_s
    )


def sdk_client(
    base_url: str,
    *,
    policy: AddressPolicy,
    headers: Sequence[tuple[str, str]] = (),
    ssl_context: ssl.SSLContext | None = None,
    timeout_s: float = 10.0,
) -> openai.OpenAI:
    """The `openai` client for untimed calls: `max_retries=0`, guarded transport, no env proxies.

    Authentication travels in `headers` (already expanded), exactly as on the timed path.
    """
    import openai

    http_client = guarded_http_client(
        policy, ssl_context=ssl_context or default_ssl_context(), timeout_s=timeout_s
    )
    return openai.OpenAI(
        api_key="unused",  # the real credential, if any, is in `headers`
        base_url=base_url,
        max_retries=0,
        timeout=timeout_s,
        default_headers=dict(headers),
        http_client=http_client,
    )


def list_models(client: openai.OpenAI) -> list[str] | None:
    """Model ids from `models.list()`; None when the server has no model list (404).

    Raises `HarnessError` with `blocked_by_policy`, `connect`, `timeout_connect` or an HTTP code.
    """
    import openai

    try:
        return [model.id for model in client.models.list()]
    except openai.NotFoundError:
        return None
    except openai.APIStatusError as exc:
        code = http_error_code(exc.status_code)
        raise HarnessError(code, f"listing models failed with HTTP {exc.status_code}") from exc
    except openai.APITimeoutError as exc:
        raise HarnessError("timeout_connect", "the endpoint did not answer in time") from exc
    except openai.APIConnectionError as exc:
        cause = _harness_cause(exc)
        if cause is not None:
            raise cause from exc
        raise HarnessError("connect", f"cannot reach the endpoint: {_root_message(exc)}") from exc


def _harness_cause(exc: BaseException) -> HarnessError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, HarnessError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _root_message(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return str(exc) or type(exc).__name__
