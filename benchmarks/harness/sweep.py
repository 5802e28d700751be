"""Runs a whole bench from a `BenchConfig`: calibration, the sweep points, the cache probe.

`run_bench(config)` is the entry point for scripts, the command line and the app's task.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from benchmarks.harness import cacheprobe
from benchmarks.harness.client import StreamingClient
from benchmarks.harness.config import EndpointConfig, Limits, Thresholds
from benchmarks.harness.connector import default_ssl_context, list_models, sdk_client
from benchmarks.harness.errors import HarnessError
from benchmarks.harness.loadgen import ClientMonitor, run_load
from benchmarks.harness.plan import (
    CALIBRATION_ATTEMPTS,
    DEFAULT_PLAN,
    Calibration,
    Message,
    Plan,
    PlanPoint,
    Workload,
    build_messages,
    estimated_tokens,
    flatten,
    new_nonce,
)
from benchmarks.harness.policy import AddressPolicy, AllowAll
from benchmarks.harness.records import RequestRecord
from benchmarks.harness.report import build_report, point_report, warning

ProgressFn = Callable[[int, int], None]  # (requests done, requests planned)
ReportHook = Callable[[dict[str, Any], list[RequestRecord]], None]
CANCEL_POLL_S = 0.1
_T = TypeVar("_T")


@dataclass(frozen=True)
class BenchConfig:
    """Everything one bench needs; plain data, so the app can build it from its models."""

    endpoint: EndpointConfig
    plan: Plan = DEFAULT_PLAN
    workload: Workload = field(default_factory=Workload)
    limits: Limits = field(default_factory=Limits)
    thresholds: Thresholds = field(default_factory=Thresholds)
    policy: AddressPolicy = field(default_factory=AllowAll)
    check_endpoint: bool = True  # one untimed models.list() before anything else


@dataclass(frozen=True)
class RequestBudget:
    """How many requests a bench sends at most, by purpose."""

    check: int
    calibration: int
    warmup: int
    measured: int
    probe: int

    @property
    def total(self) -> int:
        return self.check + self.calibration + self.warmup + self.measured + self.probe


def request_budget(config: BenchConfig) -> RequestBudget:
    plan = config.plan
    prompts = len(config.workload.sweep_prompts)
    targets = len(plan.calibration_targets())
    points = plan.points()
    return RequestBudget(
        check=int(config.check_endpoint),
        calibration=prompts + CALIBRATION_ATTEMPTS * targets + int(plan.exact_output),
        warmup=sum(plan.warmup_for(point.concurrency) for point in points),
        measured=plan.requests_per_point * len(points),
        probe=cacheprobe.probe_request_count() if plan.cache_probe else 0,
    )


def run_bench(
    config: BenchConfig,
    *,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    hooks: Sequence[ReportHook] = (),
) -> tuple[dict[str, Any], list[RequestRecord]]:
    """Run the bench and return the report dict and every request's record.

    Raises `HarnessError` when the endpoint cannot be used at all (`blocked_by_policy`,
    `connect`, an HTTP error on the first request). `cancel` may be set from any thread; the
    report then covers what finished and is invalid. Each hook may add to the report (the
    advisor's blocks). Records carry `purpose` ("calibration", "sweep", "probe_*") and `warmup`.
    """
    if config.check_endpoint:
        check_endpoint(config)
    bench = _Bench(config, progress)
    report, records = _event_loop_run(bench.run(cancel))
    for hook in hooks:
        hook(report, records)
    return report, records


def check_endpoint(config: BenchConfig) -> list[str] | None:
    """Untimed connection check through the SDK; returns the model ids, None without a list."""
    endpoint = config.endpoint
    ssl_context = default_ssl_context(endpoint.ca_file)
    client = sdk_client(
        endpoint.origin.base_url,
        policy=config.policy,
        headers=endpoint.all_headers(),
        ssl_context=ssl_context,
        timeout_s=config.limits.connect_timeout_s,
    )
    with client:
        return list_models(client)


def _event_loop_run(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run on uvloop when it is installed (it is pinned), else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


class _Bench:
    """One bench in progress: its client, its calibration, and the records so far."""

    def __init__(self, config: BenchConfig, progress: ProgressFn | None) -> None:
        self.config = config
        self.progress = progress
        self.planned = request_budget(config).total - int(config.check_endpoint)
        self.records: list[RequestRecord] = []
        self.points: list[dict[str, Any]] = []
        self.warnings: list[dict[str, Any]] = []
        self.cache_probe: dict[str, Any] | None = None
        self.output_controls: dict[str, Any] = {}
        prompts = config.workload.sweep_prompts
        self.calibration = Calibration(base_tokens=[estimated_tokens(p) for p in prompts])

    async def run(
        self, cancel: threading.Event | None
    ) -> tuple[dict[str, Any], list[RequestRecord]]:
        started = _now()
        self.client = StreamingClient(
            self.config.endpoint,
            policy=self.config.policy,
            limits=self.config.limits,
            run_start_ns=time.perf_counter_ns(),
        )
        work = asyncio.create_task(self._run_all())
        watcher = asyncio.create_task(_watch(cancel, work)) if cancel else None
        try:
            await work
        except asyncio.CancelledError:
            if cancel is None or not cancel.is_set():
                raise
            self.warnings.append(warning("cancelled", "the run was cancelled before it finished"))
        finally:
            if watcher is not None:
                watcher.cancel()
            await self.client.aclose()
        report = build_report(
            endpoint=self.config.endpoint,
            plan_data=self._plan_data(),
            started=started,
            finished=_now(),
            points=self.points,
            warnings=self.warnings,
            cache_probe=self.cache_probe,
        )
        return report, self.records

    async def _run_all(self) -> None:
        await self._calibrate()
        for index, point in enumerate(self.config.plan.points()):
            await self._run_point(index, point)
        if self.config.plan.cache_probe:
            await self._probe()

    async def _send(
        self,
        messages: list[Message],
        record: RequestRecord,
        *,
        scheduled_ns: int | None = None,
        controls: dict[str, Any] | None = None,
    ) -> RequestRecord:
        body = request_body(
            self.config.endpoint,
            messages,
            max_tokens=record.target_output_tokens,
            controls=self.output_controls if controls is None else controls,
        )
        scheduled_ns = time.perf_counter_ns() if scheduled_ns is None else scheduled_ns
        try:
            await self.client.send(body, record, scheduled_ns=scheduled_ns)
        finally:  # a request cancelled in flight is still reported, as `cancelled`
            self.records.append(record)
        if self.progress is not None:
            self.progress(len(self.records), self.planned)
        return record

    async def _measure_prompt(
        self, prompt_index: int, filler_words: int, target: int
    ) -> int | None:
        """One calibration request (one output token); the server's prompt token count."""
        prompt = self.config.workload.sweep_prompts[prompt_index]
        nonce = new_nonce()
        messages = build_messages(prompt, nonce=nonce, filler_words=filler_words)
        record = RequestRecord(1, target, 1, warmup=True, purpose="calibration", nonce=nonce)
        await self._send(messages, record)
        self._fail_if_unusable(record)
        return record.prompt_tokens

    def _fail_if_unusable(self, record: RequestRecord) -> None:
        """Stop before the sweep when nothing has worked yet: the endpoint cannot be used."""
        if record.outcome == "error" and not any(r.outcome == "success" for r in self.records):
            raise HarnessError(record.error_code or "connect", record.error_message or "failed")

    async def _calibrate(self) -> None:
        """Learn each prompt's base length and the filler's tokens per word from usage."""
        if self.config.plan.exact_output:
            self.output_controls = await self._probe_output_controls()
        calibration = self.calibration
        for index in range(len(calibration.base_tokens)):
            measured = await self._measure_prompt(index, 0, 0)
            if measured is None:
                message = (
                    "the server reports no usage: prompt lengths are estimated, not calibrated"
                )
                self.warnings.append(warning("usage_missing", message))
                return
            calibration.base_tokens[index] = measured
        for target in self.config.plan.calibration_targets():
            for _ in range(CALIBRATION_ATTEMPTS):
                words = calibration.filler_words(0, target)
                measured = await self._measure_prompt(0, words, target)
                if measured is None or words == 0:
                    break
                if abs(measured / target - 1) <= self.config.thresholds.prompt_tolerance / 2:
                    break
                calibration.learn(prompt_index=0, filler_words=words, prompt_tokens=measured)

    async def _probe_output_controls(self) -> dict[str, Any]:
        """`ignore_eos` and `min_tokens` when the endpoint accepts them (it answers 400 if not)."""
        controls = {"ignore_eos": True, "min_tokens": 1}
        prompt = self.config.workload.sweep_prompts[0]
        nonce = new_nonce()
        messages = build_messages(prompt, nonce=nonce, filler_words=0)
        record = RequestRecord(1, 0, 1, warmup=True, purpose="calibration", nonce=nonce)
        await self._send(messages, record, controls=controls)
        if record.http_status in (400, 422):
            return {}
        self._fail_if_unusable(record)
        return controls

    async def _run_point(self, index: int, point: PlanPoint) -> None:
        plan = self.config.plan
        point_records: list[RequestRecord] = []
        prompts = self.config.workload.sweep_prompts

        async def send(request_index: int, warmup: bool, scheduled_ns: int) -> None:
            prompt_index = request_index % len(prompts)
            words = self.calibration.filler_words(prompt_index, point.target_prompt_tokens)
            nonce = new_nonce()
            messages = build_messages(prompts[prompt_index], nonce=nonce, filler_words=words)
            record = RequestRecord(
                point.concurrency,
                point.target_prompt_tokens,
                point.target_output_tokens,
                warmup=warmup,
                nonce=nonce,
            )
            point_records.append(record)
            await self._send(messages, record, scheduled_ns=scheduled_ns)

        async with ClientMonitor() as monitor:
            await run_load(
                send,
                concurrency=point.concurrency,
                requests=plan.requests_per_point,
                warmup=plan.warmup_for(point.concurrency),
                rate_per_s=plan.rate_per_s,
                duration_s=plan.duration_s,
                seed=plan.seed + index,
            )
        data, point_warnings = point_report(
            point,
            point_records,
            plan=plan,
            load=monitor.result(),
            index=index,
            thresholds=self.config.thresholds,
        )
        self.points.append(data)
        self.warnings.extend(point_warnings)

    async def _probe(self) -> None:
        target = self.config.plan.probe_prompt_tokens()

        async def send(messages: list[Message], purpose: str, nonce: str) -> RequestRecord:
            record = RequestRecord(1, target, 1, purpose=purpose, nonce=nonce)
            return await self._send(messages, record)

        records = await cacheprobe.probe_cache(
            send,
            prompt=self.config.workload.sweep_prompts[0],
            filler_words=self.calibration.filler_words(0, target),
        )
        self.cache_probe = cacheprobe.probe_report(records, target_prompt_tokens=target)

    def _plan_data(self) -> dict[str, Any]:
        data = self.config.plan.to_dict()
        workload = self.config.workload
        data["workload_prompts"] = len(workload.prompts)
        data["shared_prefix_chars"] = workload.shared_prefix_chars()
        data["output_controls"] = ["max_tokens", *sorted(self.output_controls)]
        data["extra_body_keys"] = sorted(self.config.endpoint.extra_body)
        data["header_names"] = [name for name, _ in self.config.endpoint.headers]
        data["calibration"] = {
            "measured": self.calibration.measured,
            "tokens_per_word": round(self.calibration.tokens_per_word, 4),
            "base_prompt_tokens": self.calibration.base_tokens,
        }
        return data


def request_body(
    endpoint: EndpointConfig,
    messages: list[Message],
    *,
    max_tokens: int,
    controls: dict[str, Any],
) -> dict[str, Any]:
    """A streaming request asking for usage; `min_tokens` follows `max_tokens` when controlled."""
    body: dict[str, Any] = {
        "model": endpoint.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": max_tokens,
    }
    if endpoint.api == "chat":
        body["messages"] = messages
    else:
        body["prompt"] = flatten(messages)
    if controls:
        body.update(controls, min_tokens=max_tokens)
    body.update(endpoint.extra_body)
    return body


async def _watch(cancel: threading.Event, work: asyncio.Task[None]) -> None:
    while not cancel.is_set():
        await asyncio.sleep(CANCEL_POLL_S)
    work.cancel()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
