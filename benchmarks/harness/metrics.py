"""Every metric and report field as data (name, unit, definition), matching docs GLOSSARY.

The report schema page and the CSV headers are generated from here; a report field without an
entry fails a test. Regenerate the page, advisor blocks included, with
`python -m advisor.report_schema --write`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.config import (
    CHUNK_USAGE_TOLERANCE,
    CLIENT_DELAY_P90_LIMIT_MS,
    CPU_SHARE_LIMIT,
    LOOP_LAG_P99_LIMIT_MS,
    MIN_SAMPLES,
    PROMPT_TOLERANCE,
)
from benchmarks.harness.records import RequestRecord

SCHEMA_DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "report-schema.md"


@dataclass(frozen=True)
class Metric:
    """One named quantity. `type` is its JSON type; `statistics`, `object` and `array` values
    are described by the schema section named after their path."""

    name: str
    unit: str
    definition: str
    type: str = "number"


def _m(name: str, unit: str, definition: str, type_: str = "number") -> Metric:
    return Metric(name, unit, definition, type_)


# --- Per request: the glossary's table, then the record's other fields. ---

REQUEST_METRICS: tuple[Metric, ...] = (
    _m("concurrency", "requests", "requests in flight the point was run at", "integer"),
    _m("target_prompt_tokens", "tokens", "prompt length the sweep point asked for", "integer"),
    _m("target_output_tokens", "tokens", "`max_tokens` the request asked for", "integer"),
    _m("warmup", "", "sent and discarded before the point's measured requests", "boolean"),
    _m(
        "purpose",
        "",
        "`sweep`, `calibration`, `probe_cold`, `probe_warm` or `probe_shared_prefix`",
        "string",
    ),
    _m(
        "nonce",
        "",
        "the unique first line of the prompt, to find the request in the server's logs",
        "string",
    ),
    _m(
        "scheduled_s",
        "s from run start",
        "when the request was due: in open loop its Poisson arrival time; in closed loop when "
        "its concurrency slot became free",
    ),
    _m("sent_s", "s from run start", "when the last byte of the request was written"),
    _m(
        "client_delay_ms",
        "ms",
        "`sent_s - scheduled_s`: the load generator fell behind (coordinated omission)",
    ),
    _m(
        "connect_ms",
        "ms",
        "TCP connect plus TLS handshake when the request opened a new connection; null when it "
        "reused one",
    ),
    _m("ttfb_ms", "ms", "response headers received - sent"),
    _m(
        "ttft_ms",
        "ms",
        "first chunk carrying at least one generated token (content **or** reasoning) - sent. "
        "Role-only, empty and usage-only chunks do not count.",
    ),
    _m(
        "ttfa_ms",
        "ms",
        "first chunk carrying visible answer content - sent (differs from TTFT on reasoning "
        "models)",
    ),
    _m(
        "e2e_ms",
        "ms",
        "last token chunk received - sent. The trailing usage chunk and `[DONE]` do not extend it.",
    ),
    _m(
        "output_tokens",
        "tokens",
        "`usage.completion_tokens` from the server (includes reasoning tokens). Only when the "
        "server sends no usage: counted chunks, and the request is flagged `tokens_estimated`.",
        "integer",
    ),
    _m("prompt_tokens", "tokens", "`usage.prompt_tokens`", "integer"),
    _m(
        "cached_prompt_tokens",
        "tokens",
        "`usage.prompt_tokens_details.cached_tokens` when present, else null (unknown, not 0)",
        "integer",
    ),
    _m(
        "tpot_ms",
        "ms/token",
        "`(e2e_ms - ttft_ms) / (output_tokens - 1)`; undefined for fewer than 2 tokens",
    ),
    _m(
        "itl_ms",
        "ms",
        "gaps between consecutive token-carrying chunks. A chunk can hold several tokens, so ITL "
        "is a chunk-level distribution, not a per-token one. Per chunk the client knows its "
        "arrival offset and its character count, never its token count.",
        "array",
    ),
    _m(
        "chunk_offsets_us",
        "µs",
        "arrival of each token-carrying chunk after sent (integers)",
        "array",
    ),
    _m(
        "chunk_chars", "characters", "content plus reasoning characters of each such chunk", "array"
    ),
    _m(
        "tokens_estimated",
        "",
        "the server sent no usage, so `output_tokens` counts chunks",
        "boolean",
    ),
    _m("finish_reason", "", "the server's `finish_reason`, null if it sent none", "string"),
    _m(
        "outcome",
        "",
        "`success` (finished with `[DONE]` or a `finish_reason`), `incomplete` (stream broke "
        "after it started), `error` (no token received)",
        "string",
    ),
    _m(
        "error_code",
        "",
        "stable code when outcome is not success; see the error codes below",
        "string",
    ),
    _m("error_message", "", "what went wrong, for people; not stable", "string"),
    _m("http_status", "", "status of the response, null when none arrived", "integer"),
)

# --- The report, one section per JSON object; the key is the object's path. ---

STATISTICS: tuple[Metric, ...] = (
    _m("n", "samples", "number of values (successful requests; chunk gaps for ITL)", "integer"),
    _m("p50", "metric's unit", "median, linear interpolation"),
    _m("p90", "metric's unit", "90th percentile"),
    _m("p95", "metric's unit", "95th percentile"),
    _m("p99", "metric's unit", "99th percentile"),
    _m("mean", "metric's unit", "arithmetic mean"),
    _m("stdev", "metric's unit", "sample standard deviation; null for one value"),
    _m("p50_ci95", "metric's unit", "[lo, hi]: 95% bootstrap interval of the median", "array"),
)

_STAT = "statistics"
_POINT_STATISTIC = "over successful measured requests, or null when none succeeded"

REPORT_SECTIONS: dict[str, tuple[Metric, ...]] = {
    "": (
        _m("schema_version", "", 'the string "1.0"', "string"),
        _m("endpoint", "", "what was measured", "object"),
        _m("started", "UTC ISO 8601", "when the run started (a label, not a duration)", "string"),
        _m("finished", "UTC ISO 8601", "when the run finished", "string"),
        _m("harness_version", "", "version of the measuring code", "string"),
        _m("plan", "", "the sweep as run", "object"),
        _m(
            "valid",
            "",
            "false when any client-side warning was raised; no verdict on an invalid run",
            "boolean",
        ),
        _m("warnings", "", "what may distort the numbers", "array"),
        _m("points", "", "one entry per sweep point", "array"),
        _m("cache_probe", "", "the prompt-cache probe, null when not asked for", "object"),
        _m("latency_model", "", "reserved for the advisor (documented in its section)", "reserved"),
        _m("diagnosis", "", "reserved for the advisor (documented in its section)", "reserved"),
        _m(
            "recommendations",
            "",
            "reserved for the advisor (documented in its section)",
            "reserved",
        ),
    ),
    "endpoint": (
        _m("base_url", "", "the API base URL, e.g. `http://host:8000/v1`", "string"),
        _m("model", "", "the model name sent in each request", "string"),
        _m("api", "", "`chat` (/chat/completions) or `completions` (/completions)", "string"),
    ),
    "plan": (
        _m("prompt_tokens", "tokens", "target prompt lengths of the grid", "array"),
        _m("output_tokens", "tokens", "target output lengths (`max_tokens`) of the grid", "array"),
        _m("concurrency", "requests", "concurrencies of the grid", "array"),
        _m("requests_per_point", "requests", "measured requests per point, warm-up excluded"),
        _m("warmup_per_point", "requests", "warm-up requests per point; null: one per slot"),
        _m("rate_per_s", "requests/s", "open-loop Poisson rate; null for closed loop"),
        _m("duration_s", "s", "a point stops issuing requests after this long; null: no limit"),
        _m("cache_probe", "", "whether the cache probe was asked for", "boolean"),
        _m("slo_ttft_ms", "ms", "TTFT SLO for goodput; null when not given"),
        _m("slo_tpot_ms", "ms/token", "TPOT SLO for goodput; null when not given"),
        _m("exact_output", "", "whether `ignore_eos`/`min_tokens` were tried", "boolean"),
        _m("seed", "", "seed of arrival times and bootstrap", "integer"),
        _m("workload_prompts", "prompts", "prompts in the workload", "integer"),
        _m("shared_prefix_chars", "characters", "length of the prompts' common prefix", "integer"),
        _m(
            "output_controls",
            "",
            "body parameters that fixed the output length (`max_tokens`, plus `ignore_eos` and "
            "`min_tokens` when the endpoint accepted them)",
            "array",
        ),
        _m("extra_body_keys", "", "names of the extra body parameters sent", "array"),
        _m("header_names", "", "names of the extra headers sent (never their values)", "array"),
        _m("calibration", "", "how prompts were brought to their target length", "object"),
    ),
    "plan.calibration": (
        _m("measured", "", "false when the server reported no usage to calibrate on", "boolean"),
        _m("tokens_per_word", "tokens/word", "measured token rate of the deterministic filler"),
        _m(
            "base_prompt_tokens",
            "tokens",
            "each sweep prompt's length with nonce and no filler",
            "array",
        ),
    ),
    "warnings[]": (
        _m("code", "", "stable code; see the warning codes below", "string"),
        _m("message", "", "what happened, for people; not stable", "string"),
        _m("point", "", "index in `points`, null for the run as a whole", "integer"),
    ),
    "points[]": (
        _m("target_prompt_tokens", "tokens", "the point's target prompt length", "integer"),
        _m("target_output_tokens", "tokens", "the point's `max_tokens`", "integer"),
        _m("concurrency", "requests", "requests in flight (a cap in open loop)", "integer"),
        _m("rate_per_s", "requests/s", "open-loop rate; null in closed loop"),
        _m("requests", "requests", "measured requests sent, warm-up excluded", "integer"),
        _m("succeeded", "requests", "requests with outcome `success`", "integer"),
        _m("incomplete", "requests", "requests with outcome `incomplete`", "integer"),
        _m(
            "errors",
            "requests",
            "counts by `error_code` of the requests that did not succeed (error and incomplete)",
            "map",
        ),
        _m("prompt_tokens", "tokens", "mean measured `usage.prompt_tokens`"),
        _m("output_tokens", "tokens", "mean measured output tokens"),
        _m("cached_prompt_tokens", "tokens", "mean reported cached tokens; null when unknown"),
        _m(
            "tokens_estimated",
            "",
            "some successful request had no usage, so its tokens were counted as chunks",
            "boolean",
        ),
        _m("ttft_ms", "ms", f"TTFT statistics {_POINT_STATISTIC}", _STAT),
        _m(
            "tpot_ms",
            "ms/token",
            f"TPOT statistics {_POINT_STATISTIC} (null below 2 tokens)",
            _STAT,
        ),
        _m("itl_ms", "ms", f"statistics of every chunk gap {_POINT_STATISTIC}", _STAT),
        _m("e2e_ms", "ms", f"E2E statistics {_POINT_STATISTIC}", _STAT),
        _m("ttfa_ms", "ms", f"TTFA statistics {_POINT_STATISTIC}", _STAT),
        _m("ttfb_ms", "ms", f"TTFB statistics {_POINT_STATISTIC}", _STAT),
        _m("client_delay_ms", "ms", "client delay statistics over all measured requests", _STAT),
        _m(
            "duration_s",
            "s",
            "measurement window: first measured request due to last token received",
        ),
        _m(
            "output_tokens_per_s",
            "tokens/s",
            "sum of output tokens of successful requests / wall time of the measurement window "
            "(aggregate throughput)",
        ),
        _m(
            "goodput",
            "share",
            "share of all requests (errors and incomplete count as misses) whose own `ttft_ms` ≤ "
            "the TTFT SLO and own `tpot_ms` ≤ the TPOT SLO (a 1-token request has no TPOT and "
            "meets it); null without SLOs",
        ),
        _m("client", "", "how busy the client was during the point", "object"),
    ),
    "points[].client": (
        _m("cpu_share", "share of a core", "CPU time of the event-loop thread / wall time"),
        _m("loop_lag_p99_ms", "ms", "99th percentile of how late a 5 ms ticker woke up"),
        _m("loop_lag_max_ms", "ms", "largest such lag"),
    ),
    "statistics": STATISTICS,
    "cache_probe": (
        _m("target_prompt_tokens", "tokens", "the largest sweep prompt, at least 1,000", "integer"),
        _m("rounds", "", "rounds of cold, warm and shared-prefix requests", "integer"),
        _m("prompt_tokens", "tokens", "median measured prompt tokens of the cold requests"),
        _m("cold_ttft_ms", "ms", "median TTFT with a unique prefix"),
        _m("warm_ttft_ms", "ms", "median TTFT of the same prompt repeated at once"),
        _m("shared_prefix_ttft_ms", "ms", "median TTFT of the same prefix with a new suffix"),
        _m("cold_cached_prompt_tokens", "tokens", "median reported cached tokens, cold"),
        _m("warm_cached_prompt_tokens", "tokens", "median reported cached tokens, warm"),
        _m(
            "shared_prefix_cached_prompt_tokens",
            "tokens",
            "median reported cached tokens, shared prefix",
        ),
        _m(
            "server_caches",
            "",
            "true, false, or null when the evidence cannot tell",
            "boolean",
        ),
        _m("evidence", "", "the reason for `server_caches`, in one sentence", "string"),
    ),
}

WARNING_CODES: dict[str, tuple[bool, str]] = {
    # code: (makes the run invalid, meaning); thresholds are the defaults of `config.Thresholds`
    "usage_missing": (False, "the server sent no usage: tokens were counted as chunks"),
    "chunk_usage_mismatch": (
        False,
        f"token-carrying chunks differ from usage tokens by more than {CHUNK_USAGE_TOLERANCE:.0%}:"
        " ITL is per chunk, not per token",
    ),
    "prompt_length_missed": (
        False,
        f"mean measured prompt tokens missed the target by more than {PROMPT_TOLERANCE:.0%}",
    ),
    "client_saturated": (
        True,
        f"the client's event-loop thread used more than {CPU_SHARE_LIMIT:.0%} of a core",
    ),
    "loop_lag": (True, f"the event loop woke up more than {LOOP_LAG_P99_LIMIT_MS:g} ms late (p99)"),
    "client_delay": (
        True,
        f"requests left more than {CLIENT_DELAY_P90_LIMIT_MS:g} ms after they were due (p90, "
        "connection set-up excluded)",
    ),
    "too_few_samples": (True, f"fewer than {MIN_SAMPLES} successful measured requests at a point"),
    "cancelled": (True, "the run was cancelled before it finished"),
}

ERROR_CODES: dict[str, str] = {
    "connect": "TCP connection failed or the name did not resolve",
    "tls": "TLS handshake or certificate/hostname verification failed",
    "timeout_connect": "no connection within the connect timeout",
    "timeout_ttft": "no token within the TTFT deadline after sending",
    "timeout_idle": "the server was silent longer than the idle-read timeout",
    "timeout_total": "the request passed its total deadline (e.g. a trickling server)",
    "http_401": "HTTP 401: the key was refused",
    "http_403": "HTTP 403: forbidden",
    "http_429": "HTTP 429: rate limited",
    "http_3xx": "a redirect, never followed",
    "http_4xx": "any other HTTP 4xx",
    "http_5xx": "HTTP 5xx",
    "protocol": "the response was not a valid HTTP/1.1 SSE stream of JSON events",
    "too_large": "the response or one event exceeded its size cap",
    "stream_error": 'the server sent `event: error` or an `{"error": ...}` payload',
    "no_tokens": "the stream finished cleanly without a generated token",
    "disconnected": "the connection closed before the stream finished",
    "blocked_by_policy": "the address policy refused every address of the host",
    "cancelled": "the run was cancelled while the request was in flight",
}


def request_csv_header() -> list[str]:
    return [metric.name for metric in REQUEST_METRICS]


def request_csv_row(record: RequestRecord) -> list[str]:
    """One CSV row in `request_csv_header()` order; lists are space-separated, None is empty."""
    row: list[str] = []
    for metric in REQUEST_METRICS:
        value = getattr(record, metric.name)
        if isinstance(value, list):
            value = " ".join(str(item) for item in value)
        row.append("" if value is None else str(value))
    return row


def undocumented_fields(
    report: Mapping[str, Any], extra_sections: Mapping[str, Sequence[Metric]] | None = None
) -> list[str]:
    """Paths of report fields that have no entry here (a reserved block is not walked unless
    `extra_sections` describes it)."""
    sections: dict[str, Sequence[Metric]] = {**REPORT_SECTIONS, **(extra_sections or {})}
    missing: list[str] = []

    def walk(obj: Mapping[str, Any], section: str, prefix: str) -> None:
        known = {metric.name: metric for metric in sections[section]}
        for key, value in obj.items():
            path = f"{prefix}{key}"
            section_path = f"{section}.{key}" if section else key
            metric = known.get(key)
            if metric is None:
                missing.append(path)
            elif value is None:
                continue
            elif metric.type == _STAT:
                walk(value, "statistics", f"{path}.")
            elif metric.type == "array" and f"{section_path}[]" in sections:
                for item in value:
                    walk(item, f"{section_path}[]", f"{path}[].")
            elif section_path in sections and isinstance(value, Mapping):
                walk(value, section_path, f"{path}.")

    walk(report, "", "")
    return missing


def render_report_schema(extra_sections: Sequence[str] = ()) -> str:
    """The Markdown of docs/report-schema.md; `extra_sections` are appended (the advisor's)."""
    lines = [
        "# Report schema (version 1.0)",
        "",
        "<!-- Generated from benchmarks/harness/metrics.py and advisor/report_schema.py by",
        "     `python -m advisor.report_schema --write`. Do not edit by hand. -->",
        "",
        "`python manage.py bench --json PATH` writes this report. Every duration comes from a",
        "monotonic clock on the machine that sent the requests; times are milliseconds unless a",
        "name says otherwise. Statistics cover successful measured requests only: read them",
        "next to `succeeded`, `incomplete` and `errors`. A run with `valid: false` must not be",
        "given a verdict.",
        "",
    ]
    for path, metrics in REPORT_SECTIONS.items():
        title = {"": "Top level", "statistics": "Statistics object"}.get(path, f"`{path}`")
        lines += [f"## {title}", "", *metric_table(metrics), ""]
    lines += ["## Per request (records and CSV columns)", "", *metric_table(REQUEST_METRICS), ""]
    lines += ["## Warning codes", "", "| code | makes the run invalid | meaning |", "|---|---|---|"]
    lines += [
        f"| `{code}` | {'yes' if bad else 'no'} | {text} |"
        for code, (bad, text) in WARNING_CODES.items()
    ]
    lines += ["", "## Error codes", "", "| code | meaning |", "|---|---|"]
    lines += [f"| `{code}` | {text} |" for code, text in ERROR_CODES.items()]
    lines += ["", "## Advisor blocks", ""]
    if extra_sections:
        for section in extra_sections:
            lines += [section.rstrip(), ""]
    else:
        lines += [
            "`latency_model`, `diagnosis` and `recommendations` are reserved for the advisor,",
            "which documents them here.",
            "",
        ]
    return "\n".join(lines)


def metric_table(metrics: Sequence[Metric]) -> list[str]:
    rows = ["| name | type | unit | definition |", "|---|---|---|---|"]
    for metric in metrics:
        rows.append(f"| `{metric.name}` | {metric.type} | {metric.unit} | {metric.definition} |")
    return rows


def main(argv: Sequence[str]) -> int:
    """Print the harness's part of the page; the committed page (with the advisor's blocks)
    is written by `python -m advisor.report_schema --write`."""
    text = render_report_schema()
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
