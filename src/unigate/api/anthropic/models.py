"""Anthropic-format model listing: `GET /v1/models` (`after_id`, `before_id`, `limit`) and
`GET /v1/models/{model}`, as the `anthropic` SDK's `models.list()` and `models.retrieve()`
call them.

OpenAI clients and google-genai (whose default API version is `v1`) use the same two paths,
so the shape is chosen per request from what each SDK always sends: `anthropic-version` ->
Anthropic's; a Gemini-style key (`x-goog-api-key` or `?key=`) -> Gemini's (`gemini_models`);
anything else -> text.py's OpenAI listing. Only the catalog's concrete ids the key may use
are shown. Errors are raised, and the edge renders them in the same client's shape (the
endpoints' `style_of`), its own (a bad key) included.
"""

from __future__ import annotations

from typing import Any

from unigate.api.gemini.models import GeminiModelsAPI
from unigate.api.openai.text import MODEL_PARAM, TextAPI
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway

DEFAULT_LIMIT = 20  # Anthropic's defaults and bounds for models.list
MAX_LIMIT = 1000
# Anthropic's `created_at` is a release date; "the epoch when unknown", as its API documents.
UNKNOWN_DATE = "1970-01-01T00:00:00Z"


def client_style(request: Request) -> str:
    """The client's format, and so its error style, by what each SDK always sends."""
    if request.header(b"anthropic-version") is not None:
        return "anthropic"
    query = request.scope.get("query_string", b"")
    if request.header(b"x-goog-api-key") is not None or _has_key_param(query):
        return "gemini"
    return "openai"


def _has_key_param(query: bytes) -> bool:
    """Whether the raw query names `key` (Gemini's `?key=`), read without decoding it: choosing
    how to render an error must not itself fail on a query the request is refused for."""
    return any(part.partition(b"=")[0] == b"key" for part in query.split(b"&"))


class AnthropicModelsAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.openai = TextAPI(gw)
        self.gemini = GeminiModelsAPI(gw)

    def _allowed(self, principal: Principal) -> list[str]:
        return self.gw.catalog.listed_for(principal)  # per call: a config reload replaces it

    async def list_models(self, request: Request, principal: Principal) -> None:
        fmt = client_style(request)
        if fmt == "openai":
            await self.openai.list_models(request, principal)
        elif fmt == "gemini":
            await self.gemini.list_models(request, principal)
        else:
            await send_json(request.send, 200, _page(self._allowed(principal), request.query))

    async def get_model(self, request: Request, principal: Principal) -> None:
        fmt = client_style(request)
        name = request.params["model"]
        if fmt == "openai":
            await self.openai.get_model(request, principal)
        elif fmt == "gemini":
            await self.gemini.get_model(request, principal)
        elif name not in self._allowed(principal):
            raise NotFound(f"model: {name}", code="model_not_found")
        else:
            await send_json(request.send, 200, _model(name))


def _model(name: str) -> dict[str, Any]:
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": UNKNOWN_DATE,
        "lifecycle": "active",
    }


def _page(names: list[str], query: dict[str, str]) -> dict[str, Any]:
    """One page in catalog order: after `after_id`, or the `limit` ids just before `before_id`."""
    raw = query.get("limit") or str(DEFAULT_LIMIT)
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidRequest(f"limit: must be an integer from 1 to {MAX_LIMIT}.", param="limit")
    limit = int(raw)
    before, after = query.get("before_id"), query.get("after_id")
    if before:
        end = _index(names, before, "before_id")
        start = max(0, end - limit)
        more = start > 0
    else:
        start = _index(names, after, "after_id") + 1 if after else 0
        end = min(len(names), start + limit)
        more = end < len(names)
    page = names[start:end]
    return {
        "data": [_model(name) for name in page],
        "has_more": more,
        "first_id": page[0] if page else None,
        "last_id": page[-1] if page else None,
    }


def _index(names: list[str], cursor: str, param: str) -> int:
    try:
        return names.index(cursor)
    except ValueError:
        raise InvalidRequest(f"{param}: no model with the id {cursor!r}.", param=param) from None


def endpoints(gw: Gateway) -> list[Endpoint]:
    """The model endpoints of all three formats (text.py registers none): OpenAI-format calls
    are handed to text.py's `TextAPI`."""
    api = AnthropicModelsAPI(gw)
    return [
        Endpoint("GET", "/v1/models", api.list_models, style_of=client_style),
        Endpoint("GET", "/v1/models/{model}", api.get_model, param=MODEL_PARAM, style_of=client_style),
    ]
