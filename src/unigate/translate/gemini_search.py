"""Hosted web search ⇄ Gemini's Google Search grounding.

A Gemini request turns the search on with a `googleSearch` tool (`googleSearchRetrieval` on
older models); a grounded candidate carries `groundingMetadata`: the queries it ran
(`webSearchQueries`), the pages (`groundingChunks[].web`) and which spans of the answer
each page supports (`groundingSupports`, offsets in UTF-8 bytes of a part). These helpers map
that to and from the canonical form (`translate/web_search`), whose offsets count characters
of the whole answer.
"""

from __future__ import annotations

from typing import Any

from unigate.translate import web_search
from unigate.translate.gemini_fields import Json, as_list, as_object, field
from unigate.translate.web_search import Citation, Search, Source

SEARCH_TOOLS = ("googleSearch", "googleSearchRetrieval")


def is_search_tool(tool: Json) -> bool:
    return any(field(tool, name) is not None for name in SEARCH_TOOLS)


def search_tool() -> Json:
    """Gemini's search tool for canonical `web_search_options` (it takes no location)."""
    return {"googleSearch": {}}


def part_offsets(parts: list[Json]) -> list[int]:
    """Where each part's text starts in the answer (characters), for `groundingSupports` that
    name a `partIndex`: thoughts and non-text parts add nothing."""
    offsets, at = [], 0
    for part in parts:
        offsets.append(at)
        if isinstance(part.get("text"), str) and not part.get("thought"):
            at += len(part["text"])
    return offsets


def grounding_in(
    meta: Any, text: str, parts: list[Json] | None = None
) -> tuple[list[Citation], Search | None]:
    """The citations and the search of a candidate's `groundingMetadata`. With `parts`, a
    support's offsets are within the part it names; without (a stream), within `text`."""
    meta = as_object(meta)
    queries = tuple(q for q in as_list(field(meta, "webSearchQueries")) if isinstance(q, str))
    sources = []
    for chunk in map(as_object, as_list(field(meta, "groundingChunks"))):
        page = as_object(chunk.get("web"))
        uri = page.get("uri")
        title = page.get("title") or page.get("domain")
        sources.append(
            Source(uri, title if isinstance(title, str) else uri) if isinstance(uri, str) else None
        )
    offsets = part_offsets(parts) if parts is not None else []
    cited: list[Citation] = []
    for support in map(as_object, as_list(field(meta, "groundingSupports"))):
        span = _span(as_object(support.get("segment")), text, parts, offsets)
        if span is None:
            continue
        for i in as_list(field(support, "groundingChunkIndices")):
            source = sources[i] if isinstance(i, int) and 0 <= i < len(sources) else None
            if source is not None:
                cited.append(Citation(source.url, source.title, *span))
    found = [s for s in sources if s is not None]
    search = Search(queries, web_search.unique_sources(found)) if queries or found else None
    return cited, search


def _span(segment: Json, text: str, parts: list[Json] | None, offsets: list[int]) -> tuple[int, int] | None:
    start, end = field(segment, "startIndex") or 0, field(segment, "endIndex")
    if not isinstance(start, int) or not isinstance(end, int) or end < start:
        return None
    index = field(segment, "partIndex") or 0
    if parts is None or not isinstance(index, int) or not 0 <= index < len(parts):
        return web_search.char_index(text, start), web_search.char_index(text, end)
    own = parts[index].get("text")
    if not isinstance(own, str):
        return None
    base = offsets[index]
    return base + web_search.char_index(own, start), base + web_search.char_index(own, end)


def grounding_out(text: str, cited: list[Citation], searches: list[Search]) -> Json:
    """`groundingMetadata` for a canonical answer (one text part: offsets within it)."""
    chunks: dict[str, Source] = {}
    for found in searches:
        for source in found.sources:
            chunks.setdefault(source.url, source)
    for cite in cited:
        chunks.setdefault(cite.url, Source(cite.url, cite.title))
    index = {url: i for i, url in enumerate(chunks)}
    spans: dict[tuple[int, int], list[int]] = {}
    for cite in cited:
        if cite.end <= len(text):
            spans.setdefault((cite.start, cite.end), []).append(index[cite.url])
    meta: Json = {
        "webSearchQueries": [q for found in searches for q in found.queries],
        "groundingChunks": [{"web": {"uri": s.url, "title": s.title}} for s in chunks.values()],
        "groundingSupports": [
            {
                "segment": {
                    "startIndex": web_search.byte_index(text, start),
                    "endIndex": web_search.byte_index(text, end),
                    "text": text[start:end],
                },
                "groundingChunkIndices": indices,
            }
            for (start, end), indices in sorted(spans.items())
        ],
    }
    return meta
