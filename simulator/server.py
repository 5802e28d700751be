"""The OpenAI-compatible HTTP front of the simulator, on aiohttp: one engine per profile.

Token chunks are written straight to the socket from the engine's step callback (chunked
framing done here), so 10,000 chunks/s cost one write each, not one task switch each.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from simulator import tokenizer
from simulator.engine import EngineLoop, Scheduler, SimSequence, block_hashes
from simulator.faults import FAULT_HEADER, Fault, FaultSyntaxError, fault_draw, fault_parse
from simulator.groundtruth import GroundTruthLog, LagMonitor, RequestRecord
from simulator.output import OutputPlan, TextStream, output_plan, request_seed
from simulator.profile import Profile

logger = logging.getLogger("simulator")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HEADER_REQUEST_ID = "X-Sim-Request-Id"
HEADER_ARRIVAL_NS = "X-Sim-Arrival-Ns"


class ApiError(Exception):
    """An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        error_type: str = "invalid_request_error",
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.error_type = error_type
        self.param = param
        self.headers = dict(headers or {})

    def response(self) -> web.Response:
        body = {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }
        return web.json_response(body, status=self.status, headers=self.headers)


@dataclass(slots=True)
class CompletionRequest:
    """A validated /v1/chat/completions or /v1/completions request."""

    chat: bool
    profile: Profile
    stream: bool
    include_usage: bool
    prompt: list[str]
    max_tokens: int | None
    min_tokens: int
    ignore_eos: bool
    seed: int | None
    reasoning_effort: str | None


def _bad_request(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, code="invalid_value", param=param)


def _optional_int(body: Mapping[str, Any], name: str, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad_request(f"{name} must be an integer >= {minimum}", name)
    return int(value)


def _message_text(message: Any) -> tuple[str, str]:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise _bad_request("each message needs a role and content", "messages")
    content = message.get("content")
    if content is None:
        return message["role"], ""
    if isinstance(content, str):
        return message["role"], content
    if isinstance(content, list):
        parts = [part.get("text", "") for part in content if isinstance(part, dict)]
        return message["role"], " ".join(str(part) for part in parts)
    raise _bad_request("message content must be a string or a list of parts", "messages")


def _prompt_tokens(body: Mapping[str, Any], *, chat: bool) -> list[str]:
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _bad_request("messages must be a non-empty list", "messages")
        return tokenizer.chat_tokens([_message_text(message) for message in messages])
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, str):
        tokens = tokenizer.tokenize(prompt)
    elif isinstance(prompt, list) and all(isinstance(item, int) for item in prompt):
        tokens = [str(item) for item in prompt]
    else:
        raise _bad_request("prompt must be a string (one prompt per request)", "prompt")
    if not tokens:
        raise _bad_request("prompt must contain at least one token", "prompt")
    return tokens


class SimServer:
    """Serves every profile under its own model id; builds the aiohttp application."""

    def __init__(
        self,
        profiles: Sequence[Profile],
        *,
        api_key: str | None = None,
        time_scale: float = 1.0,
        ground_truth_path: Path | None = None,
        lag_limit_ms: float = 10.0,
    ) -> None:
        if not profiles:
            raise ValueError("at least one profile is needed")
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.profiles = {profile.name: profile for profile in profiles}
        self.api_key = api_key
        self.time_scale = time_scale
        self.ground_truth = GroundTruthLog(ground_truth_path)
        self.monitor = LagMonitor(lag_limit_ms)
        self.engines: dict[str, EngineLoop] = {}
        self._fault_rngs = {profile.name: random.Random(profile.seed) for profile in profiles}
        self._ids = itertools.count(1)
        self._id_prefix = uuid.uuid4().hex[:8]
        self._tasks: list[asyncio.Task[None]] = []
        self._created_s = int(time.time())

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors_middleware], client_max_size=64 << 20)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_get("/health", self.health)
        app.router.add_get("/sim/stats", self.stats)
        app.router.add_post("/sim/stats/reset", self.stats_reset)
        app.router.add_get("/sim/ground-truth/{request_id}", self.ground_truth_get)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, app: web.Application) -> None:
        for name, profile in self.profiles.items():
            self.engines[name] = EngineLoop(Scheduler(profile), time_scale=self.time_scale)
        loops = [engine.run() for engine in self.engines.values()]
        self._tasks = [asyncio.create_task(coroutine) for coroutine in [*loops, self.monitor.run()]]

    async def _stop(self, app: web.Application) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.ground_truth.close()

    @web.middleware
    async def _errors_middleware(
        self, request: web.Request, handler: Handler
    ) -> web.StreamResponse:
        try:
            if request.path.startswith("/v1/"):
                self._check_api_key(request)
            return await handler(request)
        except ApiError as error:
            return error.response()
        except web.HTTPException as error:
            if error.status < 400:
                raise
            code = "not_found" if error.status == 404 else f"http_{error.status}"
            return ApiError(error.status, error.reason, code=code).response()

    def _check_api_key(self, request: web.Request) -> None:
        if self.api_key is None:
            return
        if request.headers.get("Authorization", "") != f"Bearer {self.api_key}":
            raise ApiError(
                401,
                "Incorrect API key provided.",
                code="invalid_api_key",
                error_type="invalid_request_error",
            )

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(self, request: web.Request) -> web.Response:
        data = [
            {
                "id": name,
                "object": "model",
                "created": self._created_s,
                "owned_by": "phasewise-simulator",
                "description": profile.description,
            }
            for name, profile in self.profiles.items()
        ]
        return web.json_response({"object": "list", "data": data})

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.monitor.summary())

    async def stats_reset(self, request: web.Request) -> web.Response:
        self.monitor.reset()
        return web.json_response(self.monitor.summary())

    async def ground_truth_get(self, request: web.Request) -> web.Response:
        record = self.ground_truth.get(request.match_info["request_id"])
        if record is None:
            raise ApiError(404, "no ground truth for that request id", code="not_found")
        return web.json_response(record.as_dict())

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._complete(request, chat=True)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._complete(request, chat=False)

    async def _parse(self, request: web.Request, *, chat: bool) -> CompletionRequest:
        try:
            body = await request.json()
        except ValueError:
            raise _bad_request("the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise _bad_request("the body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str):
            raise _bad_request("model is required", "model")
        profile = self.profiles.get(model)
        if profile is None:
            raise ApiError(
                404, f"The model `{model}` does not exist.", code="model_not_found", param="model"
            )
        if body.get("n", 1) != 1:
            raise _bad_request("only n=1 is supported", "n")
        stream = bool(body.get("stream", False))
        stream_options = body.get("stream_options")
        if stream_options is not None and not stream:
            raise _bad_request(
                "stream_options is only allowed when stream is true", "stream_options"
            )
        include_usage = bool((stream_options or {}).get("include_usage", False))
        max_tokens = _optional_int(body, "max_completion_tokens", 1)
        if max_tokens is None:
            max_tokens = _optional_int(body, "max_tokens", 1)
        prompt = _prompt_tokens(body, chat=chat)
        reasoning_effort = body.get("reasoning_effort")
        return CompletionRequest(
            chat=chat,
            profile=profile,
            stream=stream,
            include_usage=include_usage,
            prompt=prompt,
            max_tokens=max_tokens,
            min_tokens=_optional_int(body, "min_tokens", 0) or 0,
            ignore_eos=bool(body.get("ignore_eos", False)),
            seed=_optional_int(body, "seed", -(2**63)),
            reasoning_effort=reasoning_effort if isinstance(reasoning_effort, str) else None,
        )

    def _fault(self, request: web.Request, profile: Profile) -> Fault | None:
        header = request.headers.get(FAULT_HEADER)
        if header:
            try:
                return fault_parse(header)
            except FaultSyntaxError as error:
                raise _bad_request(str(error), FAULT_HEADER) from None
        return fault_draw(profile, self._fault_rngs[profile.name])

    def _plan(self, parsed: CompletionRequest) -> OutputPlan:
        profile = parsed.profile
        prompt_tokens = len(parsed.prompt)
        context_left = profile.model.context_tokens - prompt_tokens
        if context_left < 1 or (parsed.max_tokens or 1) > context_left:
            raise ApiError(
                400,
                f"This model's maximum context length is {profile.model.context_tokens} tokens; "
                f"the request has {prompt_tokens} prompt tokens and asks for "
                f"{parsed.max_tokens} more.",
                code="context_length_exceeded",
                param="messages" if parsed.chat else "prompt",
            )
        plan = output_plan(
            profile,
            seed=request_seed(profile, "\x1f".join(parsed.prompt), parsed.seed),
            max_tokens=parsed.max_tokens if parsed.max_tokens is not None else context_left,
            min_tokens=parsed.min_tokens,
            ignore_eos=parsed.ignore_eos and parsed.max_tokens is not None,
            reasoning_effort=parsed.reasoning_effort,
        )
        if not self.engines[profile.name].scheduler.fits(prompt_tokens, plan.output_tokens):
            raise ApiError(
                400,
                "The request's prompt and output do not fit in the server's KV cache.",
                code="context_length_exceeded",
            )
        return plan

    async def _complete(self, request: web.Request, *, chat: bool) -> web.StreamResponse:
        arrival_ns = time.perf_counter_ns()
        parsed = await self._parse(request, chat=chat)
        profile = parsed.profile
        plan = self._plan(parsed)
        request_id = f"{self._id_prefix}-{next(self._ids)}"
        record = RequestRecord(
            request_id=request_id,
            model=profile.name,
            endpoint="chat" if chat else "completions",
            stream=parsed.stream,
            arrival_ns=arrival_ns,
            arrival_unix_s=time.time(),
            prompt_tokens=len(parsed.prompt),
            completion_tokens=plan.output_tokens,
            reasoning_tokens=plan.reasoning_tokens,
        )
        fault = self._fault(request, profile)
        if fault is not None:
            record.fault = str(fault)
        try:
            if fault is not None and fault.kind in ("error_500", "rate_limit"):
                raise self._fault_error(fault, request_id)
            return await self._serve(request, parsed, plan, record, fault)
        except ApiError as error:
            record.status = error.status
            record.outcome = "error"
            raise
        finally:
            self.ground_truth.add(record)

    @staticmethod
    def _fault_error(fault: Fault, request_id: str) -> ApiError:
        headers = {HEADER_REQUEST_ID: request_id}
        if fault.kind == "rate_limit":
            headers["Retry-After"] = str(fault.retry_after_s)
            return ApiError(
                429,
                "Rate limit reached (simulated).",
                code="rate_limit_exceeded",
                error_type="requests",
                headers=headers,
            )
        return ApiError(
            500,
            "The server had an error while processing your request (simulated).",
            code="server_error",
            error_type="server_error",
            headers=headers,
        )

    async def _serve(
        self,
        request: web.Request,
        parsed: CompletionRequest,
        plan: OutputPlan,
        record: RequestRecord,
        fault: Fault | None,
    ) -> web.StreamResponse:
        profile = parsed.profile
        # The whole round trip is spent up front: the client sees the same timings as with half
        # on the way in and half on the way out.
        record.network_delay_ms = profile.network_rtt_ms * self.time_scale
        record.request_overhead_ms = profile.request_overhead_ms * self.time_scale
        front_delay_s = (record.network_delay_ms + record.request_overhead_ms) / 1000.0
        if front_delay_s > 0:
            await asyncio.sleep(front_delay_s)
        engine = self.engines[profile.name]
        seq = SimSequence(
            prompt_tokens=len(parsed.prompt),
            output_tokens=plan.output_tokens,
            reasoning_tokens=plan.reasoning_tokens,
            block_hashes=block_hashes(parsed.prompt) if profile.prefix_cache else (),
        )
        headers = {
            HEADER_REQUEST_ID: record.request_id,
            HEADER_ARRIVAL_NS: str(record.arrival_ns),
            "X-Sim-Prompt-Tokens": str(record.prompt_tokens),
            "X-Sim-Queue-Depth": str(len(engine.scheduler.waiting)),
        }
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if parsed.stream:
            return await self._serve_stream(
                request, parsed, plan, record, fault, seq, headers, done
            )
        sink = _CollectingSink(parsed, plan, record, done)
        seq.sink = sink
        engine.submit(seq)
        await done
        self._note_engine_times(record, seq)
        if fault is not None and fault.kind == "stall":
            await asyncio.sleep(fault.stall_ms / 1000.0)
        if fault is not None and fault.kind == "disconnect":
            record.outcome = "disconnected"
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=200)
        body = sink.body()
        if fault is not None and fault.kind == "malformed":
            body = body[: len(body) // 2]
        headers.update(self._done_headers(record, seq, engine))
        response = web.Response(body=body, content_type="application/json", headers=headers)
        record.finish_reason = plan.finish_reason
        await response.prepare(request)  # a Response sends its headers with the body
        write_ns = time.perf_counter_ns()
        record.headers_offset_ms = (write_ns - record.arrival_ns) / 1e6
        record.note_chunk(write_ns, plan.output_tokens)
        await response.write_eof()
        return response

    async def _serve_stream(
        self,
        request: web.Request,
        parsed: CompletionRequest,
        plan: OutputPlan,
        record: RequestRecord,
        fault: Fault | None,
        seq: SimSequence,
        headers: dict[str, str],
        done: asyncio.Future[None],
    ) -> web.StreamResponse:
        engine = self.engines[parsed.profile.name]
        response = web.StreamResponse(
            headers={
                **headers,
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        record.headers_offset_ms = (time.perf_counter_ns() - record.arrival_ns) / 1e6
        transport = request.transport
        if transport is None:
            record.outcome = "client_disconnected"
            return response
        seq.sink = _StreamSink(self, parsed, plan, record, fault, transport, done)
        engine.submit(seq)
        try:
            await done
        finally:
            seq.cancelled = seq.cancelled or not done.done()
        self._note_engine_times(record, seq)
        if record.outcome == "success":
            with contextlib.suppress(ConnectionError):
                await response.write_eof()
        return response

    def _note_engine_times(self, record: RequestRecord, seq: SimSequence) -> None:
        record.cached_tokens = seq.cached_tokens
        record.completion_tokens = seq.generated_tokens
        if seq.admitted_s is not None:
            record.queue_ms = (seq.admitted_s - seq.submitted_s) * self.time_scale * 1000.0
            if seq.first_token_s is not None:
                record.prefill_ms = (seq.first_token_s - seq.admitted_s) * self.time_scale * 1000.0

    def _done_headers(
        self, record: RequestRecord, seq: SimSequence, engine: EngineLoop
    ) -> dict[str, str]:
        """Ground-truth headers of a non-streaming response (all known when it is written)."""

        def offset_ms(engine_s: float | None) -> str:
            if engine_s is None:
                return ""
            return f"{(engine.real_s(engine_s) * 1e9 - record.arrival_ns) / 1e6:.3f}"

        return {
            "X-Sim-Queue-Ms": f"{record.queue_ms or 0.0:.3f}",
            "X-Sim-Prefill-Ms": f"{record.prefill_ms or 0.0:.3f}",
            "X-Sim-Cached-Tokens": str(record.cached_tokens),
            "X-Sim-Completion-Tokens": str(record.completion_tokens),
            "X-Sim-First-Token-Offset-Ms": offset_ms(seq.first_token_s),
            "X-Sim-Last-Token-Offset-Ms": offset_ms(seq.finished_s),
        }


def _usage(record: RequestRecord) -> dict[str, Any]:
    return {
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "total_tokens": record.prompt_tokens + record.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": record.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": record.reasoning_tokens},
    }


class _TokenText:
    """Splits a request's tokens into reasoning text and answer text, in order."""

    def __init__(self, plan: OutputPlan) -> None:
        self._reasoning_left = plan.reasoning_tokens
        self._words = TextStream(plan.seed)

    def take(self, count: int) -> tuple[str, str]:
        """(reasoning text, answer text) of the next `count` tokens."""
        reasoning_count = min(count, self._reasoning_left)
        self._reasoning_left -= reasoning_count
        reasoning = self._words.take(reasoning_count) if reasoning_count else ""
        if reasoning_count and not self._reasoning_left:
            self._words.restart()
        answer_count = count - reasoning_count
        return reasoning, self._words.take(answer_count) if answer_count else ""


class _CollectingSink:
    """Gathers a non-streaming response's text; resolves `done` with the last token."""

    def __init__(
        self,
        parsed: CompletionRequest,
        plan: OutputPlan,
        record: RequestRecord,
        done: asyncio.Future[None],
    ) -> None:
        self._parsed = parsed
        self._plan = plan
        self._record = record
        self._done = done
        self._text = _TokenText(plan)
        self._reasoning: list[str] = []
        self._answer: list[str] = []

    def deliver(self, seq: SimSequence, count: int, due_s: float) -> None:
        reasoning, answer = self._text.take(count)
        self._reasoning.append(reasoning)
        self._answer.append(answer)
        if seq.finished and not self._done.done():
            self._done.set_result(None)

    def body(self) -> bytes:
        record = self._record
        answer = "".join(self._answer)
        reasoning = "".join(self._reasoning)
        common = {
            "id": record.request_id,
            "created": int(record.arrival_unix_s),
            "model": record.model,
        }
        if self._parsed.chat:
            message: dict[str, Any] = {"role": "assistant", "content": answer}
            if reasoning:
                message["reasoning_content"] = reasoning
            choice: dict[str, Any] = {"index": 0, "message": message}
            body = {**common, "object": "chat.completion"}
        else:
            choice = {"index": 0, "text": reasoning + answer}
            body = {**common, "object": "text_completion"}
        choice.update({"logprobs": None, "finish_reason": self._plan.finish_reason})
        body.update({"choices": [choice], "usage": _usage(record)})
        return json.dumps(body).encode()


class _StreamSink:
    """Writes a request's SSE events straight to its socket as the engine produces tokens.

    Events are pre-rendered byte templates; content words never need JSON escaping. Delays
    (stall, trickle, jitter) queue events behind a timer so order is kept.
    """

    def __init__(
        self,
        server: SimServer,
        parsed: CompletionRequest,
        plan: OutputPlan,
        record: RequestRecord,
        fault: Fault | None,
        transport: asyncio.BaseTransport,
        done: asyncio.Future[None],
    ) -> None:
        self._server = server
        self._plan = plan
        self._record = record
        self._fault = fault
        self._transport: Any = transport
        self._done = done
        self._text = _TokenText(plan)
        self._chat = parsed.chat
        self._include_usage = parsed.include_usage
        self._time_scale = server.time_scale
        self._jitter_s = parsed.profile.network_jitter_ms / 1000.0 * server.time_scale
        self._rng = random.Random(plan.seed)
        self._chunks_sent = 0
        self._last_due_s = 0.0
        self._pending: list[tuple[float, bytes, int, bool]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._seq: SimSequence | None = None
        obj = "chat.completion.chunk" if self._chat else "text_completion"
        self._head = (
            f'data: {{"id":"{record.request_id}","object":"{obj}",'
            f'"created":{int(record.arrival_unix_s)},"model":"{record.model}","choices":'
        ).encode()

    def _event(self, field: str, text: str, finish_reason: str | None) -> bytes:
        finish = f'"{finish_reason}"' if finish_reason else "null"
        if self._chat:
            choice = f'{{"index":0,"delta":{{"{field}":"{text}"}},"logprobs":null,'
        else:
            choice = f'{{"index":0,"text":"{text}","logprobs":null,'
        body = f'[{choice}"finish_reason":{finish}}}]}}\n\n'
        return self._head + body.encode()

    def _render(self, count: int, first: bool, last: bool) -> bytes:
        reasoning, answer = self._text.take(count)
        finish_reason = self._plan.finish_reason if last else None
        parts: list[bytes] = []
        if first and self._chat:
            parts.append(
                self._head + b'[{"index":0,"delta":{"role":"assistant","content":""},'
                b'"logprobs":null,"finish_reason":null}]}\n\n'
            )
        if reasoning:
            field = "reasoning_content" if self._chat else "text"
            parts.append(self._event(field, reasoning, None if answer else finish_reason))
        if answer or not reasoning:
            parts.append(self._event("content" if self._chat else "text", answer, finish_reason))
        if last:
            if self._include_usage:
                usage = json.dumps(_usage(self._record), separators=(",", ":"))
                parts.append(self._head + b'[],"usage":' + usage.encode() + b"}\n\n")
            parts.append(b"data: [DONE]\n\n")
        return b"".join(parts)

    def deliver(self, seq: SimSequence, count: int, due_s: float) -> None:
        self._seq = seq
        first = seq.generated_tokens == count
        payload = self._render(count, first, seq.finished)
        fault = self._fault
        if fault is not None and self._chunks_sent + len(self._pending) == fault.after_chunks:
            if fault.kind == "malformed":
                payload = self._head + b'[{"index":0,"delta":{"content":"\n\n' + payload
            elif fault.kind == "stall":
                due_s += fault.stall_ms / 1000.0
            elif fault.kind == "disconnect":
                self._queue(due_s, b"", 0, disconnect=True)
                return
        if fault is not None and fault.kind == "trickle" and self._chunks_sent + len(self._pending):
            due_s = max(due_s, self._last_due_s + fault.interval_ms / 1000.0)
        if self._jitter_s:
            due_s += self._rng.uniform(0.0, self._jitter_s)
        self._queue(max(due_s, self._last_due_s), payload, count, disconnect=False)

    def _queue(self, due_s: float, payload: bytes, tokens: int, *, disconnect: bool) -> None:
        self._last_due_s = due_s
        if not self._pending and due_s <= time.perf_counter():
            self._write(due_s, payload, tokens, disconnect)
            return
        self._pending.append((due_s, payload, tokens, disconnect))
        if self._timer is None:
            self._arm()

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        delay_s = self._pending[0][0] - time.perf_counter()
        self._timer = loop.call_later(max(0.0, delay_s), self._flush)

    def _flush(self) -> None:
        self._timer = None
        now_s = time.perf_counter()
        while self._pending and self._pending[0][0] <= now_s:
            due_s, payload, tokens, disconnect = self._pending.pop(0)
            self._write(due_s, payload, tokens, disconnect)
        if self._pending and not self._done.done():
            self._arm()

    def _write(self, due_s: float, payload: bytes, tokens: int, disconnect: bool) -> None:
        if self._done.done():
            return
        transport = self._transport
        if disconnect or transport.is_closing():
            self._record.outcome = "disconnected" if disconnect else "client_disconnected"
            if self._seq is not None:
                self._seq.cancelled = True
            transport.close()
            self._done.set_result(None)
            return
        # Stamped just before the write, so no client can have the bytes before their stamp.
        write_ns = time.perf_counter_ns()
        transport.write(b"%x\r\n%b\r\n" % (len(payload), payload))
        self._server.monitor.record((write_ns / 1e9 - due_s) * 1000.0)
        self._record.note_chunk(write_ns, tokens)
        self._chunks_sent += 1
        if self._seq is not None and self._seq.finished and not self._pending:
            self._record.finish_reason = self._plan.finish_reason
            self._done.set_result(None)


def configure_event_loop() -> None:
    """Use uvloop when it is installed (it is in requirements) and not disabled."""
    if os.environ.get("SIM_NO_UVLOOP"):
        return
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
