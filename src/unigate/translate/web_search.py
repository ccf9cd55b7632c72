"""Hosted web search in the canonical (OpenAI chat completions) form, declared once; each
dialect maps its own search tool and its results to and from this form.

- Request: `web_search_options`, chat completions' own field: `search_context_size` and an
  approximate `user_location` (`{"type": "approximate", "approximate": {city, country,
  region, timezone}}`).
- Answer: `message.annotations`, chat completions' `url_citation`s, offsets counted in
  characters of `message.content`; and, when the upstream says what it searched, the
  gateway's addition `message.web_searches`: one entry per search, `{"queries": [...],
  "sources": [{"type": "url", "url", "title"}]}`. An answer with citations but no such entry
  (an OpenAI search model) implies one search whose sources are the cited pages.
- Stream: the same two fields in a chunk's `delta` (OpenAI sends `delta.annotations` once the
  cited text is out; searches come before the text they informed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

OPTIONS = "web_search_options"
ANNOTATIONS = "annotations"
SEARCHES = "web_searches"
LOCATION_FIELDS = ("city", "country", "region", "timezone")
CONTEXT_SIZES = frozenset({"low", "medium", "high"})


@dataclass(frozen=True, slots=True)
class Citation:
    """A cited page and the span of the answer (characters, end exclusive) it supports."""

    url: str
    title: str
    start: int
    end: int

    def json(self) -> Json:
        return {
            "type": "url_citation",
            "url_citation": {
                "url": self.url,
                "title": self.title,
                "start_index": self.start,
                "end_index": self.end,
            },
        }


@dataclass(frozen=True, slots=True)
class Source:
    url: str
    title: str


@dataclass(frozen=True, slots=True)
class Search:
    queries: tuple[str, ...]
    sources: tuple[Source, ...]

    @property
    def query(self) -> str:
        return "; ".join(q for q in self.queries if q)

    def json(self) -> Json:
        return {
            "queries": list(self.queries),
            "sources": [{"type": "url", "url": s.url, "title": s.title} for s in self.sources],
        }


# ---------------------------------------------------------------- request


def options(context_size: Any = None, location: Any = None) -> Json:
    """`web_search_options` for a context size and an approximate location (the fields of
    `LOCATION_FIELDS` that are strings; anything else is left out)."""
    out: Json = {}
    if isinstance(context_size, str) and context_size in CONTEXT_SIZES:
        out["search_context_size"] = context_size
    place = {k: v for k, v in _object(location).items() if k in LOCATION_FIELDS and isinstance(v, str)}
    if place:
        out["user_location"] = {"type": "approximate", "approximate": place}
    return out


def location(opts: Any) -> dict[str, str]:
    """The approximate location fields of `web_search_options`."""
    where = _object(_object(_object(opts).get("user_location")).get("approximate"))
    return {k: v for k, v in where.items() if k in LOCATION_FIELDS and isinstance(v, str)}


def wants_search(payload: Json) -> bool:
    return isinstance(payload.get(OPTIONS), dict)


# ---------------------------------------------------------------- answers


def citations(annotations: Any) -> list[Citation]:
    """The url citations of a message's (or delta's) `annotations`; malformed ones are skipped:
    upstream fields are untrusted."""
    out: list[Citation] = []
    for entry in annotations if isinstance(annotations, list) else []:
        cite = _object(_object(entry).get("url_citation"))
        url, start, end = cite.get("url"), _index(cite.get("start_index")), _index(cite.get("end_index"))
        if isinstance(url, str) and start is not None and end is not None and start <= end:
            title = cite.get("title")
            out.append(Citation(url, title if isinstance(title, str) else url, start, end))
    return out


def searches(value: Any) -> list[Search]:
    """The gateway's `web_searches` entries of a message or delta."""
    out: list[Search] = []
    for entry in value if isinstance(value, list) else []:
        entry = _object(entry)
        queries = tuple(q for q in entry.get("queries") or [] if isinstance(q, str))
        sources = tuple(
            Source(s["url"], s["title"] if isinstance(s.get("title"), str) else s["url"])
            for s in map(_object, entry.get("sources") or [])
            if isinstance(s.get("url"), str)
        )
        out.append(Search(queries, sources))
    return out


def answer_searches(message: Json) -> list[Search]:
    """The searches behind an answer: the ones it names, else one implied by its citations."""
    found = searches(message.get(SEARCHES))
    if found:
        return found
    cited = citations(message.get(ANNOTATIONS))
    return [implied_search(cited)] if cited else []


def implied_search(cited: list[Citation]) -> Search:
    """A search known only from the pages it let the answer cite."""
    return Search((), unique_sources(Source(c.url, c.title) for c in cited))


def unique_sources(sources: Any) -> tuple[Source, ...]:
    seen: dict[str, Source] = {}
    for source in sources:
        seen.setdefault(source.url, source)
    return tuple(seen.values())


def annotations_json(cited: list[Citation]) -> list[Json]:
    return [c.json() for c in cited]


def searches_json(found: list[Search]) -> list[Json]:
    return [s.json() for s in found]


# ---------------------------------------------------------------- offsets


def char_index(text: str, byte_index: int) -> int:
    """The character offset of a UTF-8 byte offset into `text` (Gemini counts bytes)."""
    return len(text.encode()[:byte_index].decode(errors="ignore"))


def byte_index(text: str, char_index: int) -> int:
    return len(text[:char_index].encode())


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _object(value: Any) -> Json:
    return value if isinstance(value, dict) else {}
