"""A deterministic stand-in tokenizer and chat template, so the same text always costs the same.

Rule: split text into runs of word characters (`\\w+`) and single other non-space characters;
a run of n word characters is ceil(n / 4) tokens, each other character is one token, whitespace
is free. A chat request costs 4 tokens per message (start, role, separator, end) plus 3 that
prime the reply (start, "assistant", separator), as OpenAI's cookbook counts for its models.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

WORD_PIECE_CHARS = 4
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3

_PIECE_PATTERN = re.compile(r"\w+|[^\w\s]")


def _pieces(text: str) -> Iterator[str]:
    for match in _PIECE_PATTERN.finditer(text):
        piece = match.group()
        if len(piece) <= WORD_PIECE_CHARS:
            yield piece
        else:
            for start in range(0, len(piece), WORD_PIECE_CHARS):
                yield piece[start : start + WORD_PIECE_CHARS]


def tokenize(text: str) -> list[str]:
    """The tokens of `text` under the documented rule."""
    return list(_pieces(text))


def count_tokens(text: str) -> int:
    """Number of tokens in `text`; equal to len(tokenize(text)) without building the list."""
    total = 0
    for match in _PIECE_PATTERN.finditer(text):
        total += -(-len(match.group()) // WORD_PIECE_CHARS)
    return total


def chat_tokens(messages: Sequence[tuple[str, str]]) -> list[str]:
    """The templated token sequence of a chat: each (role, text) wrapped, then the reply primer."""
    tokens: list[str] = []
    for role, text in messages:
        tokens += ["<|start|>", role, "<|sep|>", *_pieces(text), "<|end|>"]
    tokens += ["<|start|>", "assistant", "<|sep|>"]
    return tokens
