"""Gemini-format model listing: `GET /v1beta/models` (`pageSize`, `pageToken`) and
`GET /v1beta/models/{model}`, as google-genai's `models.list()` and `models.get()` call them.
Only the catalog's concrete ids the key may use are shown (as `/v1/models` does for OpenAI
clients). Under `/v1/` (google-genai's default version) the paths are shared with the OpenAI
listing: `anthropic_models` picks this shape there for Gemini-style keys."""

from __future__ import annotations

from typing import Any

from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.routing.catalog import Catalog

DEFAULT_PAGE_SIZE = 50  # Google's own default and maximum for models.list
MAX_PAGE_SIZE = 1000

# The Gemini methods the gateway serves for a model, by what its routes' providers can do.
_METHODS = {
    "chat": ("generateContent", "streamGenerateContent"),
    "embeddings": ("embedContent", "batchEmbedContents"),
}


class GeminiModelsAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    @property
    def catalog(self) -> Catalog:
        return self.gw.catalog  # read per call: a config reload replaces it

    def _allowed(self, principal: Principal) -> list[str]:
        return self.catalog.listed_for(principal)

    def _model(self, name: str) -> dict[str, Any]:
        entry = self.catalog.resolve(name)
        capabilities = set().union(*(r.provider.capabilities for r in entry.routes)) if entry else set()
        methods = [m for cap, names in _METHODS.items() if cap in capabilities for m in names]
        return {
            "name": f"models/{name}",
            "baseModelId": name,
            "version": "unigate",
            "displayName": name,
            "description": f"{name}, served by unigate ({self.catalog.owner(name)}).",
            "supportedGenerationMethods": methods,
        }

    async def list_models(self, request: Request, principal: Principal) -> None:
        names = self._allowed(principal)
        size = _int_query(request, "pageSize", DEFAULT_PAGE_SIZE)
        size = DEFAULT_PAGE_SIZE if size == 0 else min(size, MAX_PAGE_SIZE)
        # The token is the offset of the page: opaque to clients, stable while the config is.
        start = _int_query(request, "pageToken", 0)
        page = names[start : start + size]
        body: dict[str, Any] = {"models": [self._model(name) for name in page]}
        if start + size < len(names):
            body["nextPageToken"] = str(start + size)
        await send_json(request.send, 200, body)

    async def get_model(self, request: Request, principal: Principal) -> None:
        name = request.params["model"]
        if name not in self._allowed(principal):
            raise NotFound(f"models/{name} is not found.", code="model_not_found", param="model")
        await send_json(request.send, 200, self._model(name))


def _int_query(request: Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()):  # str.isdigit takes '²', which int() refuses
        raise InvalidRequest(f"`{name}` must be a non-negative integer.", param=name)
    return int(raw)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = GeminiModelsAPI(gw)
    return [
        Endpoint("GET", "/v1beta/models", api.list_models, style="gemini"),
        # Gemini ids have no ':', so `x:generateContent` stays a POST-only path (405, `Allow`).
        Endpoint("GET", "/v1beta/models/{model}", api.get_model, style="gemini", param="[^/:]+"),
    ]
