"""Hosted web search ⇄ Anthropic's web search server tool.

Anthropic runs the search itself when a request offers `{"type": "web_search_20250305",
"name": "web_search"}`: the answer holds a `server_tool_use` block (the query), a
`web_search_tool_result` block (the pages found) and text blocks whose `citations` are
`web_search_result_location`s. These helpers map that to and from the canonical form
(`translate/web_search`): options to the tool, blocks to `web_searches` and to `url_citation`
annotations spanning the cited text block, and back to blocks for Anthropic clients, where
the text is split so that each cited span is a text block of its own.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from unigate.translate import web_search
from unigate.translate.checks import optional_object
from unigate.translate.translation import Dropped
from unigate.translate.web_search import Citation, Search, Source

Json = dict[str, Any]

TOOL_TYPE = "web_search_20250305"
TOOL_NAME = "web_search"
CITATION = "web_search_result_location"
_UNHONOURED = ("allowed_domains", "blocked_domains", "max_uses")


def is_search_tool(tool: Json) -> bool:
    kind = tool.get("type")
    return isinstance(kind, str) and kind.startswith("web_search_")


def is_search_block(block: Json) -> bool:
    """A block of a web search's run in an assistant turn (the call or its results): the answer's
    text after it carries what the search found."""
    kind = block.get("type")
    return kind == "web_search_tool_result" or (kind == "server_tool_use" and block.get("name") == TOOL_NAME)


def search_tool(options: Any) -> Json:
    """The server tool for canonical `web_search_options` (Anthropic has no context size)."""
    tool: Json = {"type": TOOL_TYPE, "name": TOOL_NAME}
    place = web_search.location(options)
    if place:
        tool["user_location"] = {"type": "approximate", **place}
    return tool


def options_of(tool: Json, where: str, dropped: Dropped | None) -> Json:
    """Canonical `web_search_options` for an Anthropic client's web search tool."""
    place = optional_object(tool.get("user_location"), f"{where}.user_location")
    if dropped is not None:
        for name in _UNHONOURED:
            if tool.get(name) is not None:
                dropped.drop(f"tools.{tool['type']}.{name}")
    return web_search.options(None, place)


# ---------------------------------------------------------------- Anthropic answers in


class SearchReader:
    """The searches and citations of an Anthropic answer, read block by block (a whole body or
    a stream); `chars` counts the answer's text so far, as the canonical offsets do."""

    def __init__(self) -> None:
        self.chars = 0
        self._queries: dict[str, str] = {}  # server_tool_use id -> query

    def use(self, block: Json) -> None:
        """A finished `server_tool_use` block (its `input` whole)."""
        if block.get("name") == TOOL_NAME and isinstance(block.get("id"), str):
            query = optional_input(block.get("input")).get("query")
            self._queries[block["id"]] = query if isinstance(query, str) else ""

    def result(self, block: Json) -> Search:
        """A `web_search_tool_result` block as the search it reports (an error: no pages)."""
        content = block.get("content")
        pages = content if isinstance(content, list) else []
        sources = tuple(
            Source(p["url"], p["title"] if isinstance(p.get("title"), str) else p["url"])
            for p in pages
            if isinstance(p, dict) and isinstance(p.get("url"), str)
        )
        query = self._queries.get(str(block.get("tool_use_id")), "")
        return Search((query,) if query else (), sources)

    def cited(self, start: int, citations: Any) -> list[Citation]:
        """The canonical citations of a text block that began at `start` and ends now."""
        out: list[Citation] = []
        for cite in citations if isinstance(citations, list) else []:
            if isinstance(cite, dict) and cite.get("type") == CITATION and isinstance(cite.get("url"), str):
                title = cite.get("title")
                out.append(
                    Citation(cite["url"], title if isinstance(title, str) else cite["url"], start, self.chars)
                )
        return out


def optional_input(value: Any) -> Json:
    """A tool use's input: an object, or the JSON text of one (as a stream assembles it)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value) if value else {}
        except orjson.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------- Anthropic answers out


def tool_use_id() -> str:
    return "srvtoolu_" + uuid.uuid4().hex[:24]


def search_blocks(found: Search, use_id: str) -> tuple[Json, Json]:
    """The `server_tool_use` and `web_search_tool_result` blocks of one search."""
    use = {"type": "server_tool_use", "id": use_id, "name": TOOL_NAME, "input": {"query": found.query}}
    pages = [
        {
            "type": "web_search_result",
            "url": s.url,
            "title": s.title,
            "encrypted_content": "",
            "page_age": None,
        }
        for s in found.sources
    ]
    return use, {"type": "web_search_tool_result", "tool_use_id": use_id, "content": pages}


def citation(cite: Citation, text: str) -> Json:
    """A canonical citation as Anthropic's; the cited text is the answer's span (the page's
    own words are not known here) and the encrypted index, the upstream's handle, is empty."""
    return {
        "type": CITATION,
        "url": cite.url,
        "title": cite.title,
        "cited_text": text[cite.start : cite.end],
        "encrypted_index": "",
    }


def text_blocks(text: str, cited: list[Citation]) -> list[Json]:
    """The answer's text as blocks, each cited span a block with its citations."""
    spans = sorted({(c.start, c.end) for c in cited if c.end <= len(text)})
    blocks: list[Json] = []
    at = 0
    for start, end in spans:
        if start < at:
            continue  # overlapping spans: the first one keeps the text
        if start > at:
            blocks.append({"type": "text", "text": text[at:start]})
        cites = [citation(c, text) for c in cited if (c.start, c.end) == (start, end)]
        blocks.append({"type": "text", "text": text[start:end], "citations": cites})
        at = end
    if at < len(text):
        blocks.append({"type": "text", "text": text[at:]})
    return [b for b in blocks if b["text"]]


def _page(source: Source) -> Json:
    return {
        "type": "web_search_result",
        "url": source.url,
        "title": source.title,
        "encrypted_content": "",
        "page_age": None,
    }
