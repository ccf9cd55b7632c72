"""What a user's message suggests for a named value: the word after "city", the number next
to "days", a capitalised place name, an e-mail address, ... Used by `schema_values` to make
generated arguments look related to the request, deterministically."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from unigate_sandbox.tokens import STOPWORDS, keywords, shorten, word_set

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'-]*(?:[ \t]+[A-Z][\w'-]*)*")
_STATED = re.compile(
    r"""\s*([:=]|\b(?:is|called|named|as|of)\b)?\s*("[^"]+"|'[^']+'|[^\s,.;!?"']+)""", re.IGNORECASE
)
_ADDRESS = re.compile(r"\S+@\S+|\bhttps?://\S+")
_PLACE_AFTER = re.compile(
    r"\b(?:in|at|near|from|to)\s+([^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"[.!?]\s*$")
_NAME_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_FOUND_FORMATS: Mapping[str, re.Pattern[str]] = MappingProxyType(
    {
        "date-time": re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})\b"
        ),
        "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
        "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
        "uri": re.compile(r"\bhttps?://[^\s\"'<>]+[^\s\"'<>.,;:!?)]"),
    }
)
_FORMAT_ALIASES: Mapping[str, str] = MappingProxyType({"url": "uri", "iri": "uri", "idn-email": "email"})

# Property names (or name parts) that call for a proper noun, free text, or a stock value.
_PLACE_WORDS = word_set(
    "location city place country region address destination origin town state where venue"
)
_PERSON_WORDS = word_set("name person author user username recipient assignee owner contact")
_TEXT_WORDS = word_set(
    """query q text prompt message content search input question topic description summary body
    keywords keyword term terms subject title comment note notes instructions reply answer reason"""
)
_STOCK_VALUES: Mapping[str, str] = MappingProxyType(
    {
        "language": "en",
        "lang": "en",
        "locale": "en-US",
        "currency": "USD",
        "unit": "metric",
        "units": "metric",
        "color": "blue",
        "colour": "blue",
        "timezone": "UTC",
        "tz": "UTC",
        "phone": "+1-555-0100",
        "email": "user@example.com",
        "url": "https://example.com/",
        "link": "https://example.com/",
        "website": "https://example.com/",
        "date": "2024-01-15",
        "time": "09:30",
    }
)


def name_parts(name: str) -> list[str]:
    """`maxResults` / `max_results` / `max-results` -> ["max", "results"]."""
    return [p.lower() for p in _NAME_PART.findall(name)]


class Hints:
    def __init__(self, text: str) -> None:
        self.text = text
        # Addresses are values of their own (see `formatted`), not sources of key words.
        self.keywords = keywords(_ADDRESS.sub(" ", text), 12)
        self.phrases = _capitalised_phrases(text)

    def mentions(self, name: str) -> list[tuple[int, int]]:
        """Where the property name (as words, e.g. "max results") appears in the text."""
        parts = name_parts(name)
        if not parts:
            return []
        spaced = r"[\s_-]*".join(re.escape(p) for p in parts)
        return [m.span() for m in re.finditer(rf"\b{spaced}\b", self.text, re.IGNORECASE)]

    def number_near(self, name: str) -> float | int | None:
        """The number written closest to a mention of `name` (within a few words)."""
        spans = self.mentions(name)
        best: tuple[int, str] | None = None
        for match in _NUMBER.finditer(self.text):
            for start, end in spans:
                distance = match.start() - end if match.start() >= end else start - match.end()
                if 0 <= distance <= 24 and (best is None or distance < best[0]):
                    best = (distance, match.group())
        if best is None:
            return None
        raw = best[1]
        return float(raw) if "." in raw else int(raw)

    def formatted(self, fmt: str) -> str | None:
        pattern = _FOUND_FORMATS.get(_FORMAT_ALIASES.get(fmt, fmt))
        found = pattern.search(self.text) if pattern else None
        return found.group() if found else None

    def pick(self, options: Sequence[Any], name: str, variant: int) -> Any:
        """The enum option the text names (else the first), rotated by `variant`."""
        base = 0
        for i, option in enumerate(options):
            named = isinstance(option, str | int | float) and not isinstance(option, bool)
            if named and re.search(rf"(?<!\w){re.escape(str(option))}(?!\w)", self.text, re.IGNORECASE):
                base = i
                break
        return options[(base + variant) % len(options)]

    def text_for(self, name: str, variant: int) -> str:
        parts = name_parts(name)
        if variant == 0:
            stated = self.value_after(name)
            if stated:
                return stated
        if any(p in _PLACE_WORDS or p in _PERSON_WORDS for p in parts):
            if self.phrases:
                return self.phrases[variant % len(self.phrases)]
            place = self.place_after_preposition() if variant == 0 else None
            if place:
                return place
        if any(p in _TEXT_WORDS for p in parts):
            words = self.keywords[variant:] + self.keywords[:variant]
            return " ".join(words[:6]) if words else shorten(self.text, 12) or "sandbox"
        for part in reversed(parts):
            if part in _STOCK_VALUES:
                return _STOCK_VALUES[part]
        if self.keywords:
            word = self.keywords[variant % len(self.keywords)]
            return word if variant < len(self.keywords) else f"{word} {variant + 1}"
        label = " ".join(parts) or "value"
        return label if variant == 0 else f"{label} {variant + 1}"

    def place_after_preposition(self) -> str | None:
        """ "weather in san francisco" -> "san francisco" (up to two content words)."""
        for match in _PLACE_AFTER.finditer(self.text):
            found: list[str] = []
            for word in match.group(1).split():
                if word.lower() in STOPWORDS:
                    break
                found.append(word)
            if found:
                return " ".join(found)
        return None

    def value_after(self, name: str) -> str | None:
        """The value stated right after the property name: `city: Paris`, `title "Q3 plan"`."""
        for _, end in self.mentions(name):
            found = _STATED.match(self.text, end)
            if not found:
                continue
            linked, value = found.group(1), found.group(2)
            quoted = value[0] in "\"'"
            value = value.strip("\"'")
            # Without a linking word only a quoted or capitalised/numeric word counts as the value,
            # so "search query about cats" does not make "about" the query.
            plausible = linked or quoted or value[:1].isupper() or value[:1].isdigit()
            if value and plausible and value.lower() not in STOPWORDS:
                return value
        return None


def _capitalised_phrases(text: str) -> list[str]:
    """Runs of capitalised words, likely proper nouns ("New York"), sentence openers last."""
    inner: list[str] = []
    openers: list[str] = []
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group().split()
        while words and words[0].lower() in STOPWORDS:
            words.pop(0)
        if not words:
            continue
        phrase = " ".join(words)
        at_start = match.start() == 0 or bool(_SENTENCE_END.search(text[: match.start()]))
        target = openers if at_start and words == match.group().split() else inner
        if phrase not in inner and phrase not in openers:
            target.append(phrase)
    return inner + openers
