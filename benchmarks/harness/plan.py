"""The sweep plan (grid, request counts, SLOs), its defaults, and how its prompts are built.

The default plan is defined here once; the command line, the app and the docs read it from here.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_PROMPT = "Continue the following notes in the same style, without commentary."
INITIAL_TOKENS_PER_WORD = 1.3  # a first guess, replaced by calibration against usage
CALIBRATION_ATTEMPTS = 3
MAX_SWEEP_PROMPTS = 8  # prompts of a workload used round-robin by the sweep (each is calibrated)

Message = dict[str, str]


@dataclass(frozen=True)
class PlanPoint:
    target_prompt_tokens: int
    target_output_tokens: int
    concurrency: int


@dataclass(frozen=True)
class Plan:
    """A grid of prompt lengths x output lengths x concurrencies, and how each point is run.

    `requests_per_point` counts measured requests (warm-up excluded); `warmup_per_point` None
    means one per concurrency slot; `rate_per_s` switches every point to open loop (Poisson
    arrivals) with `concurrency` capping requests in flight; `duration_s` stops a point early.
    """

    prompt_tokens: tuple[int, ...] = (128, 1024, 4096)
    output_tokens: tuple[int, ...] = (64,)
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests_per_point: int = 20
    warmup_per_point: int | None = None
    rate_per_s: float | None = None
    duration_s: float | None = None
    cache_probe: bool = False
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    exact_output: bool = True  # also send ignore_eos/min_tokens when the endpoint accepts them
    seed: int = 0

    def points(self) -> list[PlanPoint]:
        return [
            PlanPoint(prompt, output, concurrency)
            for prompt in self.prompt_tokens
            for output in self.output_tokens
            for concurrency in self.concurrency
        ]

    def warmup_for(self, concurrency: int) -> int:
        return concurrency if self.warmup_per_point is None else self.warmup_per_point

    def probe_prompt_tokens(self) -> int:
        """The cache probe uses the largest sweep prompt, and at least 1,000 tokens."""
        return max(*self.prompt_tokens, 1000)

    def calibration_targets(self) -> list[int]:
        """Every prompt length the run needs, in ascending order."""
        probe = {self.probe_prompt_tokens()} if self.cache_probe else set()
        return sorted(set(self.prompt_tokens) | probe)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("prompt_tokens", "output_tokens", "concurrency"):
            data[key] = list(data[key])
        return data


DEFAULT_PLAN = Plan()


@dataclass(frozen=True)
class Workload:
    """The user's prompts, each a list of chat messages; their common prefix is shared."""

    prompts: tuple[tuple[Message, ...], ...] = field(
        default=(({"role": "user", "content": DEFAULT_PROMPT},),)
    )

    @property
    def sweep_prompts(self) -> tuple[tuple[Message, ...], ...]:
        return self.prompts[:MAX_SWEEP_PROMPTS]

    def shared_prefix_chars(self) -> int:
        """Length of the common prefix of the prompts' flattened text (0 for a single prompt)."""
        if len(self.prompts) < 2:
            return 0
        texts = [flatten(prompt) for prompt in self.prompts]
        return len(os.path.commonprefix(texts))  # noqa: RUF071 (character-wise is the point)


def load_workload(path: str | Path) -> Workload:
    """A text file is one user prompt; a JSON list of message lists is a workload of several."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.lstrip().startswith("["):
        return Workload(prompts=(({"role": "user", "content": text},),))
    data = json.loads(text)
    if not isinstance(data, list) or not data:
        raise ValueError("a JSON prompt file must be a non-empty list of message lists")
    return Workload(prompts=tuple(_messages(item) for item in data))


def _messages(item: object) -> tuple[Message, ...]:
    if not isinstance(item, list) or not item:
        raise ValueError("each prompt must be a non-empty list of messages")
    messages: list[Message] = []
    for message in item:
        if not (isinstance(message, dict) and isinstance(message.get("content"), str)):
            raise ValueError('each message must be an object with a string "content"')
        messages.append({"role": str(message.get("role", "user")), "content": message["content"]})
    return tuple(messages)


def flatten(messages: Sequence[Message]) -> str:
    """The text of a message list, for the completions API."""
    return "\n\n".join(message["content"] for message in messages)


def new_nonce() -> str:
    """A unique first line, so no server prefix cache can hit on a sweep request."""
    return f"[request {uuid.uuid4().hex[:16]}]"


_VOCABULARY_TEXT = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war "
    "history party result change morning reason research girl guy moment air teacher force"
)
_VOCABULARY = _VOCABULARY_TEXT.split()
_FILLER_BLOCK_WORDS = 1024
_filler_words: list[str] = []


def filler(words: int) -> str:
    """The first `words` words of one fixed pseudo-random text (a prefix of every longer one)."""
    while len(_filler_words) < words:
        rng = random.Random(len(_filler_words) // _FILLER_BLOCK_WORDS)  # block k: seed k
        _filler_words.extend(rng.choice(_VOCABULARY) for _ in range(_FILLER_BLOCK_WORDS))
    return " ".join(_filler_words[:words])


def build_messages(
    prompt: Sequence[Message], *, nonce: str | None, filler_words: int, suffix: str = ""
) -> list[Message]:
    """The prompt with `nonce` first, then the filler and `suffix` appended to the last message."""
    messages = [dict(message) for message in prompt]
    if nonce:
        messages[0]["content"] = f"{nonce}\n{messages[0]['content']}"
    tail = " ".join(part for part in (filler(filler_words), suffix) if part)
    if tail:
        messages[-1]["content"] = f"{messages[-1]['content']}\n\n{tail}"
    return messages


@dataclass
class Calibration:
    """How many filler words bring each sweep prompt to a target token count.

    `base_tokens[i]` is prompt i's measured length with no filler (nonce and template included);
    `tokens_per_word` is the filler's measured rate. Without usage both stay estimates.
    """

    base_tokens: list[int]
    tokens_per_word: float = INITIAL_TOKENS_PER_WORD
    measured: bool = False

    def filler_words(self, prompt_index: int, target_tokens: int) -> int:
        missing = target_tokens - self.base_tokens[prompt_index]
        return max(0, round(missing / self.tokens_per_word))

    def learn(self, *, prompt_index: int, filler_words: int, prompt_tokens: int) -> None:
        added = prompt_tokens - self.base_tokens[prompt_index]
        if filler_words > 0 and added > 0:
            self.tokens_per_word = added / filler_words
            self.measured = True


def estimated_tokens(messages: Sequence[Message]) -> int:
    """A rough token count (4 characters each) for when the server reports no usage."""
    return max(1, len(flatten(messages)) // 4)
