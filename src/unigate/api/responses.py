"""The OpenAI Responses API: `POST /v1/responses` on every upstream, and the stored
responses (`GET`/`DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`).

A create is routed like a chat completion (`TextAPI.serve`: limits, fallback, usage, metrics):
to an upstream that serves the Responses API itself (`responses: native`) the request is
relayed, to any other through the canonical chat form (`translate/responses_*`). With
`store` (the default) the response is written before its answer is sent (`responses_call`);
`previous_response_id` then rebuilds the conversation from stored rows, or is relayed as is
to the native upstream that holds it. Responses are owner-scoped: another key's id is a 404.
"""

from __future__ import annotations

from typing import Any

from unigate.api.responses_call import ResponseCall
from unigate.api.text import TextAPI
from unigate.asgi import Request, send_json
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import Reply
from unigate.providers.openai import OpenAIProvider
from unigate.relay import send_reply
from unigate.responses.store import StoredResponse
from unigate.translate.responses_request import parse_request

Json = dict[str, Any]
_PENDING = frozenset({"queued", "in_progress"})
_MAX_ID = 64


class ResponsesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.text = TextAPI(gw)
        self.store = gw.responses
        self.limit = gw.config.limits.max_json_body

    async def create(self, request: Request, principal: Principal | None) -> None:
        assert principal is not None
        raw, payload = await request.json_object(self.limit)
        req = parse_request(payload)
        if req.background:
            raise InvalidRequest(
                "Background responses are not available yet; send the request without `background`.",
                param="background",
                code="unsupported_parameter",
            )
        chain: list[StoredResponse] = []
        if req.previous_response_id is not None:  # the only database read on this path
            chain = await self._conversation(req.previous_response_id, principal.key_id)
        call = ResponseCall(self.store, req, principal.key_id, chain, raw)
        await self.text.serve(
            request, principal, call.text_call(), None, call.framing, call.route, call.finish
        )

    async def _conversation(self, previous: str, key_id: str) -> list[StoredResponse]:
        chain = await self.store.chain(previous, key_id) if len(previous) <= _MAX_ID else []
        if not chain:
            raise NotFound(
                f"Previous response with id '{previous}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        if chain[-1].status in _PENDING:
            raise InvalidRequest(
                f"Previous response with id '{previous}' is still {chain[-1].status}; wait for it to finish.",
                param="previous_response_id",
            )
        return chain

    async def retrieve(self, request: Request, principal: Principal | None) -> None:
        stored = await self._owned(request, principal)
        relay = self._native(stored)
        if relay is not None:
            query = [(k, v) for k, v in request.query.items()]
            await self._relayed(request, await relay.responses_get(stored.id, query))
            return
        await send_json(request.send, 200, stored.body)

    async def delete(self, request: Request, principal: Principal | None) -> None:
        stored = await self._owned(request, principal)
        relay = self._native(stored)
        if relay is not None:
            await relay.responses_delete(stored.id)  # the upstream's copy goes too
        await self.store.delete(stored.id, stored.key_id)
        await send_json(request.send, 200, {"id": stored.id, "object": "response.deleted", "deleted": True})

    async def input_items(self, request: Request, principal: Principal | None) -> None:
        stored = await self._owned(request, principal)
        relay = self._native(stored)
        if relay is not None:
            query = [(k, v) for k, v in request.query.items()]
            await self._relayed(request, await relay.responses_input_items(stored.id, query))
            return
        await send_json(request.send, 200, page(stored.input, request.query))

    async def _owned(self, request: Request, principal: Principal | None) -> StoredResponse:
        assert principal is not None
        response_id = request.params["response_id"]
        stored = await self.store.get(response_id, principal.key_id) if len(response_id) <= _MAX_ID else None
        if stored is None:
            raise NotFound(f"Response with id '{response_id}' not found.", code="not_found")
        return stored

    def _native(self, stored: StoredResponse) -> OpenAIProvider | None:
        """The provider holding a natively answered response, if it is still configured."""
        provider = self.gw.providers.get(stored.provider) if stored.native else None
        return provider if isinstance(provider, OpenAIProvider) else None

    async def _relayed(self, request: Request, reply: Reply) -> None:
        await send_reply(request, reply, keepalive=self.gw.config.limits.stream_keepalive)


def page(items: list[Json], query: dict[str, str]) -> Json:
    """A list page of input items as OpenAI pages them: `order` desc (default) or asc, `limit`
    1-100 (default 20), `after` an item id."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("'order' must be asc or desc.", param="order", code="invalid_value")
    text = query.get("limit", "20")
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise InvalidRequest("'limit' must be an integer from 1 to 100.", param="limit", code="invalid_value")
    ordered = items if order == "asc" else items[::-1]
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    data = ordered[: int(text)]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": len(ordered) > len(data),
    }


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = ResponsesAPI(gw)
    return [
        Endpoint("POST", "/v1/responses", api.create, family="text"),
        Endpoint("GET", "/v1/responses/{response_id}", api.retrieve, family="text"),
        Endpoint("DELETE", "/v1/responses/{response_id}", api.delete, family="text"),
        Endpoint("GET", "/v1/responses/{response_id}/input_items", api.input_items, family="text"),
    ]
