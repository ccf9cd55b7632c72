"""Gemini-format embeddings: `POST /v1beta/models/{model}:embedContent` and
`:batchEmbedContents` (also under `/v1/models/...`; google-genai's `models.embed_content` sends
the batch form). A Gemini route gets the request as sent; for any other, the request becomes one
canonical OpenAI embeddings call, routed like `/v1/embeddings` to any upstream that embeds, and
the answer is shown in Gemini's shape."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson

from unigate.api.openai.text import TextAPI
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, TextCall
from unigate.providers.same_format import ClientRequest, relayed_query
from unigate.translate.gemini_embed import batch_embed_request, embed_request, embed_response


def _presenter(batch: bool) -> Callable[[Reply], Reply]:
    def present(reply: Reply) -> Reply:
        if reply.wire == "gemini":
            return reply  # a Gemini route answered the client's own request
        body = orjson.dumps(embed_response(orjson.loads(reply.body), batch))
        return Reply(reply.status, b"application/json", body, usage=reply.usage, headers=reply.headers)

    return present


class GeminiEmbedAPI:
    def __init__(self, gw: Gateway) -> None:
        self.text = TextAPI(gw)
        self.limit = gw.config.limits.max_json_body

    async def embed(self, request: Request, principal: Principal) -> None:
        await self._serve(request, principal, batch=False)

    async def batch(self, request: Request, principal: Principal) -> None:
        await self._serve(request, principal, batch=True)

    async def _serve(self, request: Request, principal: Principal, batch: bool) -> None:
        raw, payload = await request.json_object(self.limit)
        model = request.params["model"]
        canonical = (batch_embed_request if batch else embed_request)(payload, model)
        call = TextCall("embeddings", b"", canonical, model)
        client = ClientRequest(raw, relayed_query(request.scope.get("query_string", b"")))

        def native(target: Target) -> Awaitable[Reply] | None:
            # A Gemini route takes the request as sent (taskType and title kept).
            if "gemini" not in target.provider.native_formats:
                return None
            return target.provider.embed_native(payload, target, client, batch)

        await self.text.serve(request, principal, call, present=_presenter(batch), native=native)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = GeminiEmbedAPI(gw)
    out = []
    for version in ("v1beta", "v1"):
        base = f"/{version}/models/{{model}}"
        out.append(Endpoint("POST", base + ":embedContent", api.embed, family="text", style="gemini"))
        out.append(Endpoint("POST", base + ":batchEmbedContents", api.batch, family="text", style="gemini"))
    return out
