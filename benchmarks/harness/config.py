"""Plain configuration objects: the endpoint, the client's limits and the validity thresholds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from benchmarks.harness.connector import Origin, parse_base_url

Api = Literal["chat", "completions"]
API_PATHS: dict[str, str] = {"chat": "/chat/completions", "completions": "/completions"}


@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible endpoint. The key and header values never appear in a report or a
    repr (header values may carry a credential, e.g. Azure's `api-key`)."""

    base_url: str
    model: str
    api: Api = "chat"
    api_key: str | None = field(default=None, repr=False)
    api_key_header: str = "Authorization"  # "api-key" for Azure-style endpoints
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may carry a key
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    ca_file: str | None = None

    @property
    def origin(self) -> Origin:
        return parse_base_url(self.base_url)

    @property
    def request_path(self) -> str:
        return self.origin.base_path + API_PATHS[self.api]

    def all_headers(self) -> list[tuple[str, str]]:
        """Extra headers plus the credential, in the header the endpoint expects."""
        headers = list(self.headers)
        if self.api_key:
            bearer = self.api_key_header.lower() == "authorization"
            value = f"Bearer {self.api_key}" if bearer else self.api_key
            headers.append((self.api_key_header, value))
        return headers


@dataclass(frozen=True)
class Limits:
    """Bounds on one request against a slow, broken or hostile server."""

    connect_timeout_s: float = 10.0
    ttft_timeout_s: float = 120.0  # from sent to the first token
    idle_timeout_s: float = 60.0  # longest silence between two reads
    total_timeout_s: float = 600.0  # whole request, connection included, however it trickles
    max_response_bytes: int = 32 * 1024 * 1024
    max_event_bytes: int = 1024 * 1024
    drain_timeout_s: float = 1.0  # after [DONE], for the rest of the body (connection reuse)


# Validity thresholds: past any of them the client, not the server, may have set the numbers.
LOOP_LAG_P99_LIMIT_MS = 5.0
CPU_SHARE_LIMIT = 0.85  # share of one core used by the event loop's thread
CLIENT_DELAY_P90_LIMIT_MS = 10.0  # excluding connection set-up
MIN_SAMPLES = 10
PROMPT_TOLERANCE = 0.10
CHUNK_USAGE_TOLERANCE = 0.10


@dataclass(frozen=True)
class Thresholds:
    """When a point gets a warning; the client-side ones make the run invalid."""

    loop_lag_p99_ms: float = LOOP_LAG_P99_LIMIT_MS
    cpu_share: float = CPU_SHARE_LIMIT
    client_delay_p90_ms: float = CLIENT_DELAY_P90_LIMIT_MS
    min_samples: int = MIN_SAMPLES
    prompt_tolerance: float = PROMPT_TOLERANCE
    chunk_usage_tolerance: float = CHUNK_USAGE_TOLERANCE
