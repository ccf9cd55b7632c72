"""A tiny deterministic tokenizer for the sandbox: words and single punctuation marks.

It is not any real model's tokenizer; it only has to be stable, cheap, and give counts of
a realistic magnitude, so that usage accounting and `max_tokens` behave plausibly.
"""

from __future__ import annotations

import re
from itertools import islice

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"\w+")
# A stream piece is one word (or punctuation run) with the whitespace around it, so that the
# pieces of a text concatenate back to exactly that text.
_PIECE = re.compile(r"\s*\S+\s*")


def word_set(spaced: str) -> frozenset[str]:
    """A set of words written as one whitespace-separated string (compact word lists)."""
    return frozenset(spaced.split())


# Words too common to say anything about what a message is about.
STOPWORDS = word_set(
    """a about also an and any are as at be but by can could did do does for from give had has
    have hello hey hi how i if in into is it its just let like me my need no not of ok okay on or
    our please should show so some than thanks that the their them then there these they this
    to us very want was we were what when where which who why will with would you your"""
)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def count_tokens(text: str, limit: int | None = None) -> int:
    """Tokens in `text`; with a `limit`, counting stops past it (the result is then limit+1)."""
    found = _TOKEN.finditer(text)
    return sum(1 for _ in (found if limit is None else islice(found, limit + 1)))


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def keywords(text: str, limit: int = 8) -> list[str]:
    """The distinct content words of `text` in order of appearance (original case)."""
    seen: set[str] = set()
    out: list[str] = []
    for word in _WORD.findall(text):
        low = word.lower()
        if low in STOPWORDS or low in seen or (len(low) < 2 and not low.isdigit()):
            continue
        seen.add(low)
        out.append(word)
        if len(out) >= limit:
            break
    return out


def pieces(text: str) -> list[str]:
    """Split `text` into word-sized stream pieces whose concatenation is `text`."""
    found = _PIECE.findall(text)
    if not found:
        return [text] if text else []
    return found


def truncate_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """The prefix of `text` holding at most `max_tokens` tokens, and whether it was cut."""
    if max_tokens <= 0:
        return "", bool(_TOKEN.search(text))
    for i, match in enumerate(_TOKEN.finditer(text), start=1):
        if i == max_tokens:
            end = match.end()
            return text[:end], _TOKEN.search(text, end) is not None
    return text, False


def cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """`text` up to (not including) the earliest stop sequence, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
    if cut < 0:
        return text, False
    return text[:cut], True


def shorten(text: str, max_words: int) -> str:
    """`text` with whitespace collapsed, cut to `max_words` words with an ellipsis."""
    parts = text.split()
    if len(parts) <= max_words:
        return " ".join(parts)
    return " ".join(parts[:max_words]) + " ..."
