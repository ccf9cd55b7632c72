"""The sandbox's offline web search: a chat call with `web_search_options` searches for the
user's last message and answers with text that cites what it found, deterministically.

The "results" are pages under `https://example.com/search/` named after the query's key
words; `search_context_size` sets how many (low 2, medium 3, high 5) and an approximate
`user_location` city goes into their titles. The answer cites each result's title as a
`url_citation` and names the search in `web_searches` (`translate/web_search`), so every
dialect's hosted search can be exercised end to end without a network.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from unigate.translate import web_search
from unigate.translate.web_search import Citation, Search, Source
from unigate_sandbox.conversation import Conversation
from unigate_sandbox.params import invalid_type, invalid_value
from unigate_sandbox.tokens import keywords, shorten

RESULTS = {"low": 2, "medium": 3, "high": 5}
QUERY_WORDS = 12
BASE_URL = "https://example.com/search"
# A user message that asks for a search wins over calling an offered function tool.
_ASKS = re.compile(r"\b(search|look up|lookup|web|online|internet|latest|news)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """Whether and how the reply searches (None options: web search is off)."""

    options: dict[str, Any] | None

    @property
    def on(self) -> bool:
        return self.options is not None

    def answers(self, conv: Conversation, tools_active: bool) -> bool:
        """Whether this reply is a search: web search is on, the turn is the user's, and no
        function tool is to be called instead (unless the user asks for a search)."""
        user = conv.last_user
        if not self.on or conv.ends_with_tool_result or user is None:
            return False
        return not tools_active or bool(_ASKS.search(user.text))


def parse_search(payload: dict[str, Any]) -> SearchPlan:
    raw = payload.get(web_search.OPTIONS)
    if raw is None:
        return SearchPlan(None)
    if not isinstance(raw, dict):
        raise invalid_type(web_search.OPTIONS, "an object")
    size = raw.get("search_context_size")
    if size is not None and (not isinstance(size, str) or size not in RESULTS):
        where = f"{web_search.OPTIONS}.search_context_size"
        raise invalid_value(where, "expected 'low', 'medium' or 'high'.")
    location = raw.get("user_location")
    if location is not None and not isinstance(location, dict):
        raise invalid_type(f"{web_search.OPTIONS}.user_location", "an object")
    return SearchPlan(raw)


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    text: str
    citations: tuple[Citation, ...]
    search: Search

    def cut(self, length: int) -> SearchAnswer:
        """The answer cut to `length` characters (`max_tokens`): citations past it go."""
        kept = tuple(c for c in self.citations if c.end <= length)
        return SearchAnswer(self.text[:length], kept, self.search)


def search_answer(conv: Conversation, plan: SearchPlan) -> SearchAnswer:
    user = conv.last_user
    query = shorten(user.text if user else "", QUERY_WORDS) or "sandbox"
    options = plan.options or {}
    city = web_search.location(options).get("city")
    words = keywords(query, 4) or ["sandbox"]
    slug = "-".join(w.lower() for w in words)
    topic = " ".join(w.capitalize() for w in words) + (f" in {city}" if city else "")
    count = RESULTS[str(options.get("search_context_size") or "medium")]
    sources = [Source(f"{BASE_URL}/{slug}/{n}", f"{topic}: result {n}") for n in range(1, count + 1)]
    text = f'I searched the web for "{query}". Found: '
    citations: list[Citation] = []
    for n, source in enumerate(sources):
        text += "; " if n else ""
        citations.append(Citation(source.url, source.title, len(text), len(text) + len(source.title)))
        text += source.title
    text += "."
    return SearchAnswer(text, tuple(citations), Search((query,), tuple(sources)))
