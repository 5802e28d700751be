"""The OpenAI-compatible protocol, driven by the real `openai` SDK against a running simulator."""

from __future__ import annotations

import dataclasses
import time

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from simulator import tokenizer
from simulator.inprocess import RunningSimulator, simulator_in_thread
from simulator.profile import PRESETS

QUESTION = "Explain prefill and decode in one paragraph."
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": QUESTION}]


def test_it_lists_every_preset_as_a_model(client: openai.OpenAI) -> None:
    assert [model.id for model in client.models.list()] == list(PRESETS)


def test_it_answers_a_chat_with_exact_usage(client: openai.OpenAI) -> None:
    response = client.chat.completions.create(
        model="llama-8b-h100", messages=USER, max_tokens=24, extra_body={"ignore_eos": True}
    )
    content = response.choices[0].message.content or ""
    assert response.usage is not None
    assert response.usage.completion_tokens == 24
    assert tokenizer.count_tokens(content) == 24
    assert response.usage.prompt_tokens == 3 + 4 + tokenizer.count_tokens(QUESTION)
    assert response.choices[0].finish_reason == "length"
    details = response.usage.prompt_tokens_details
    assert details is not None
    assert details.cached_tokens == 0


def test_it_streams_a_chat_with_a_final_usage_chunk(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="llama-8b-h100",
        messages=USER,
        max_completion_tokens=30,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usage_chunk = chunks[-1]
    assert usage_chunk.choices == []
    assert usage_chunk.usage is not None
    assert usage_chunk.usage.completion_tokens == 30 == tokenizer.count_tokens(text)
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["length"]


def test_it_streams_without_usage_unless_asked(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="llama-8b-h100", messages=USER, max_tokens=5, stream=True
        )
    )
    assert all(chunk.usage is None for chunk in chunks)
    assert all(chunk.choices for chunk in chunks)


def test_it_serves_legacy_completions_streaming_and_not(client: openai.OpenAI) -> None:
    response = client.completions.create(
        model="llama-8b-h100",
        prompt="Once upon a time",
        max_tokens=12,
        extra_body={"ignore_eos": True},
    )
    assert response.usage is not None
    assert response.usage.prompt_tokens == tokenizer.count_tokens("Once upon a time")
    assert tokenizer.count_tokens(response.choices[0].text) == 12
    chunks = list(
        client.completions.create(
            model="llama-8b-h100",
            prompt="Once upon a time",
            max_tokens=12,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},
        )
    )
    text = "".join(chunk.choices[0].text for chunk in chunks if chunk.choices)
    assert tokenizer.count_tokens(text) == 12
    assert chunks[-1].usage is not None


def test_it_stops_naturally_but_not_before_min_tokens(client: openai.OpenAI) -> None:
    # mistral-7b-a10g-int4 answers in about 24 tokens.
    natural = client.chat.completions.create(model="mistral-7b-a10g-int4", messages=USER)
    forced = client.chat.completions.create(
        model="mistral-7b-a10g-int4", messages=USER, extra_body={"min_tokens": 100}
    )
    assert natural.usage is not None
    assert forced.usage is not None
    assert natural.usage.completion_tokens < 40
    assert natural.choices[0].finish_reason == "stop"
    assert forced.usage.completion_tokens >= 100


def test_it_gives_the_same_answer_to_the_same_request(client: openai.OpenAI) -> None:
    answers = {
        client.chat.completions.create(model="llama-8b-h100", messages=USER)
        .choices[0]
        .message.content
        for _ in range(2)
    }
    assert len(answers) == 1


def test_it_streams_reasoning_before_the_answer(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="r1-qwen-7b-h100",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"reasoning_effort": "low"},
        )
    )
    kinds = []
    for chunk in chunks:
        if chunk.choices:
            delta = chunk.choices[0].delta
            if getattr(delta, "reasoning_content", None):
                kinds.append("reasoning")
            elif delta.content:
                kinds.append("answer")
    assert kinds[0] == "reasoning"
    assert kinds[-1] == "answer"
    assert kinds == sorted(kinds, key=lambda kind: kind == "answer")
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens_details is not None
    assert 0 < (usage.completion_tokens_details.reasoning_tokens or 0) < usage.completion_tokens


def test_it_reports_cached_tokens_for_a_repeated_prefix(client: openai.OpenAI) -> None:
    system: ChatCompletionMessageParam = {
        "role": "system",
        "content": "You answer questions about GPUs. " * 60,
    }

    def cached_tokens(question: str) -> int:
        response = client.chat.completions.create(
            model="llama-8b-h100-cache",
            messages=[system, {"role": "user", "content": question}],
            max_tokens=2,
        )
        assert response.usage is not None
        assert response.usage.prompt_tokens_details is not None
        return response.usage.prompt_tokens_details.cached_tokens or 0

    assert cached_tokens("How fast is an H100?") == 0
    repeat = cached_tokens("How much memory has an H200?")
    assert repeat > 300
    assert repeat % 16 == 0


def test_it_sends_several_tokens_per_chunk_with_speculative_decoding(
    client: openai.OpenAI,
) -> None:
    chunks = list(
        client.chat.completions.create(
            model="llama-70b-h100x4-spec",
            messages=USER,
            max_tokens=80,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},
        )
    )
    token_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(token_chunks) < 0.7 * 80


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"model": "no-such-model", "messages": [{"role": "user", "content": "hi"}]},
            404,
            "model_not_found",
        ),
        ({"model": "llama-8b-h100"}, 400, "invalid_value"),
        (
            {
                "model": "llama-8b-h100",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 0,
            },
            400,
            "invalid_value",
        ),
        (
            {"model": "llama-8b-h100", "messages": [{"role": "user", "content": "hi"}], "n": 3},
            400,
            "invalid_value",
        ),
        (
            {
                "model": "llama-8b-h100",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 10_000_000,
            },
            400,
            "context_length_exceeded",
        ),
    ],
)
def test_it_reports_errors_in_openais_shape(
    sim: RunningSimulator, body: dict[str, object], status: int, code: str
) -> None:
    response = httpx.post(f"{sim.base_url}/chat/completions", json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code
    assert set(error) == {"message", "type", "param", "code"}


def test_it_rejects_a_body_that_is_not_json(sim: RunningSimulator) -> None:
    response = httpx.post(f"{sim.base_url}/chat/completions", content=b"{nope")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_it_answers_unknown_paths_with_a_json_404(sim: RunningSimulator) -> None:
    response = httpx.get(f"{sim.base_url}/engines")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_raises_the_sdks_own_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-9", messages=USER)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="llama-8b-h100", messages=[])


def test_it_checks_the_api_key_when_one_is_set() -> None:
    with simulator_in_thread(presets=["llama-8b-h100"], api_key="sk-right", time_scale=0.02) as sim:
        wrong = openai.OpenAI(base_url=sim.base_url, api_key="sk-wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as raised:
            wrong.models.list()
        assert raised.value.status_code == 401
        right = openai.OpenAI(base_url=sim.base_url, api_key="sk-right", max_retries=0)
        assert [model.id for model in right.models.list()] == ["llama-8b-h100"]


def test_it_adds_the_network_round_trip_before_the_first_byte() -> None:
    far = dataclasses.replace(
        PRESETS["llama-8b-h100"], name="far", network_rtt_ms=3000, network_jitter_ms=500
    )
    body = {
        "model": "far",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 30,
        "ignore_eos": True,
        "stream": True,
    }
    with simulator_in_thread(profiles=[far], time_scale=0.02) as sim:
        sent_s = time.perf_counter()
        with httpx.stream("POST", f"{sim.base_url}/chat/completions", json=body) as response:
            headers_s = time.perf_counter()
            request_id = response.headers["X-Sim-Request-Id"]
            texts = [line for line in response.iter_lines() if line.startswith("data: ")]
        record = httpx.get(f"{sim.root_url}/sim/ground-truth/{request_id}").json()
    assert record["network_delay_ms"] == pytest.approx(60.0)
    assert headers_s - sent_s >= 0.060
    assert record["chunk_offsets_ms"][0] >= 60.0 + record["request_overhead_ms"]
    assert sum(record["chunk_tokens"]) == 30
    assert texts[-1] == "data: [DONE]"
