"""The simulator's documented tokenizer and chat template."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulator import tokenizer


def test_it_counts_words_in_pieces_of_four_characters_and_punctuation_alone() -> None:
    assert tokenizer.tokenize("Hello, world!") == ["Hell", "o", ",", "worl", "d", "!"]
    assert tokenizer.count_tokens("a bb ccc dddd") == 4
    assert tokenizer.count_tokens("internationalization") == 5
    assert tokenizer.count_tokens("   \n\t ") == 0


def test_it_costs_four_tokens_per_message_plus_three_for_the_reply() -> None:
    text = "What is the capital of France?"
    one = tokenizer.chat_tokens([("user", text)])
    two = tokenizer.chat_tokens([("system", "Be brief."), ("user", text)])
    assert len(one) == 3 + 4 + tokenizer.count_tokens(text)
    assert len(two) == len(one) + 4 + tokenizer.count_tokens("Be brief.")


@given(st.text(max_size=200))
def test_it_counts_the_same_text_the_same_way(text: str) -> None:
    assert tokenizer.count_tokens(text) == len(tokenizer.tokenize(text))
    assert tokenizer.tokenize(text) == tokenizer.tokenize(text)
