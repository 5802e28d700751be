"""What a simulated request generates: how many tokens, how many of them reasoning, and the words.

Everything is drawn from a generator seeded by the profile seed, the request's `seed` and the
prompt, so the same request to the same profile always gets the same answer.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Literal

from simulator.profile import Profile

# Short words: each is exactly one token under the simulator's tokenizer, so re-tokenising the
# output gives back completion_tokens.
WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "it",
    "for",
    "on",
    "that",
    "with",
    "as",
    "was",
    "at",
    "by",
    "be",
    "this",
    "are",
    "from",
    "or",
    "an",
    "have",
    "not",
    "but",
    "had",
    "his",
    "they",
    "you",
    "were",
    "her",
    "she",
    "one",
    "all",
    "we",
    "can",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "out",
    "up",
    "into",
    "do",
    "than",
    "only",
    "its",
    "time",
    "two",
    "may",
    "then",
    "any",
    "like",
    "such",
    "new",
    "some",
    "what",
    "each",
    "them",
    "how",
    "made",
    "most",
    "over",
    "also",
    "did",
    "many",
    "must",
    "well",
    "back",
    "just",
    "much",
    "good",
    "both",
    "way",
    "same",
    "says",
    "long",
    "take",
    "down",
    "year",
    "work",
    "part",
    "end",
    "know",
    "load",
    "step",
    "warm",
    "fast",
    "slow",
    "read",
    "byte",
)

REASONING_EFFORT_SHARE = {"minimal": 0.1, "low": 0.25, "medium": 1.0, "high": 2.0}


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """Tokens a request will generate; the first `reasoning_tokens` of them are reasoning."""

    output_tokens: int
    reasoning_tokens: int
    finish_reason: Literal["stop", "length"]
    seed: int


def request_seed(profile: Profile, prompt_text: str, request_seed: int | None) -> int:
    """A stable seed (not Python's randomised hash) for one request."""
    key = f"{profile.seed}:{request_seed}:{prompt_text}".encode()
    return zlib.crc32(key)


def output_plan(
    profile: Profile,
    *,
    seed: int,
    max_tokens: int | None,
    min_tokens: int,
    ignore_eos: bool,
    reasoning_effort: str | None,
) -> OutputPlan:
    """How long the answer is: the natural length (profile mean +-50 %, reasoning first),
    at least `min_tokens`, cut at `max_tokens`; with `ignore_eos` exactly `max_tokens`.
    """
    rng = random.Random(seed)
    reasoning_tokens = 0
    if profile.reasoning_tokens_mean:
        share = REASONING_EFFORT_SHARE.get(reasoning_effort or "medium", 1.0)
        reasoning_tokens = max(
            1, round(profile.reasoning_tokens_mean * share * rng.uniform(0.75, 1.25))
        )
    answer_tokens = max(1, round(profile.output_tokens_mean * rng.uniform(0.5, 1.5)))
    natural_tokens = max(reasoning_tokens + answer_tokens, min_tokens)
    if max_tokens is not None and (ignore_eos or natural_tokens > max_tokens):
        return OutputPlan(max_tokens, min(reasoning_tokens, max_tokens), "length", seed)
    return OutputPlan(natural_tokens, reasoning_tokens, "stop", seed)


class TextStream:
    """The words of one request, token by token; the same seed gives the same words."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._started = False

    def take(self, count: int) -> str:
        words = self._rng.choices(WORDS, k=count)
        text = " ".join(words)
        if self._started:
            return " " + text
        self._started = True
        return text

    def restart(self) -> None:
        """The next word starts a new text (the answer after the reasoning)."""
        self._started = False
