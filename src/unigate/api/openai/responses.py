"""The OpenAI Responses API: `POST /v1/responses` on every upstream, and the stored
responses (`GET`/`DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`,
`POST /v1/responses/{id}/cancel` for background ones, `responses_background`).

A create is routed like a chat completion (`TextAPI.serve`: limits, fallback, usage, metrics):
to an upstream that serves the Responses API itself (`responses: native`) the request is
relayed, to any other through the canonical chat form (`translate/responses_*`). With
`store` (the default) the response is written before its answer is sent (`responses_call`);
`previous_response_id` then rebuilds the conversation from stored rows, or is relayed as is
to the native upstream that holds it. Responses are owner-scoped: another key's id is a 404.
"""

from __future__ import annotations

from typing import Any

from unigate.api.openai.responses_background import BackgroundRunner, replay
from unigate.api.openai.responses_call import MAX_ID, ResponseCall, load_conversation
from unigate.api.openai.responses_query import RetrieveQuery, retrieve_query
from unigate.api.openai.text import TextAPI
from unigate.api.serving.pages import list_page
from unigate.api.serving.query_params import limit_param
from unigate.api.serving.relay import send_reply
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import Reply, TextCall
from unigate.providers.openai.compatible import OpenAIProvider
from unigate.responses.store import StoredResponse
from unigate.store.key_storage import StorageQuota
from unigate.translate.responses_request import ResponsesRequest, parse_request
from unigate.translate.responses_response import ResponseFrame
from unigate.translate.responses_stream import queued_events

Json = dict[str, Any]


class ResponsesAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.text = TextAPI(gw)
        self.store = gw.responses
        self.limit = gw.config.limits.max_json_body
        self.runner = BackgroundRunner(gw, self.text)
        self.hosted = self.runner.hosted  # one log of dropped tools per key, background runs included
        self.bounds = self.runner.bounds
        tasks = gw.tasks.store  # its on-loop SQLite reader (closed with it) serves the quota's reads
        self.quota = StorageQuota(gw.engine, gw.config.limits.stored_bytes_per_key, lambda: tasks.reader)

    @property
    def keepalive(self) -> float:
        return self.gw.config.limits.stream_keepalive

    async def create(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        req = parse_request(payload)
        if req.store:
            await self.quota.check(principal.key_id, len(raw))
        chain: list[StoredResponse] = []
        if req.previous_response_id is not None:
            chain = await load_conversation(
                self.store, req.previous_response_id, principal.key_id, self.bounds
            )
        call = ResponseCall(self.store, req, principal.key_id, chain, raw, hosted=self.hosted)
        if req.background:
            await self._background(request, principal, req, payload, call.text_call())
            return
        await self.text.serve(
            request, principal, call.text_call(), framing=call.framing, native=call.route, finish=call.finish
        )

    async def _background(
        self, request: Request, principal: Principal, req: ResponsesRequest, payload: Json, call: TextCall
    ) -> None:
        """Accept a background response: admitted under the key's limits now (a key over its
        limit gets its 429 here, not a failed response later), stored as `queued` with its
        first events and this worker's lease, answered at once (or streamed from the stored
        events), then run, settling that admission."""
        if not req.store:
            raise InvalidRequest(
                "Background responses need `store`: a response that is not stored cannot be fetched.",
                param="store",
                code="invalid_value",
            )
        admitted = await self.text.serving.admit(principal, req.model, call.payload)
        accepted = ResponseFrame.for_request(req).response("queued", [])
        record = StoredResponse(
            id=accepted["id"],
            key_id=principal.key_id,
            model=req.model,
            provider="",
            native=False,
            status="queued",
            previous_id=req.previous_response_id,
            body=accepted,
            input=req.input_items,
            background=True,
        )
        try:
            await self.store.insert(record, payload, self.runner.lease(), queued_events(accepted))
        except BaseException:
            await self.gw.limits.settle(admitted.ticket)
            raise
        self.runner.launch(principal, payload, accepted, admitted)
        if req.stream:
            await replay(request, self.runner.runs, accepted["id"], -1, self.keepalive)
        else:
            await send_json(request.send, 200, accepted)

    async def cancel(self, request: Request, principal: Principal) -> None:
        """Cancel a background response; one that already ended is returned as it is (a second
        cancel is no error). The worker running it stops at once here, or within a lease
        renewal on another process."""
        stored = await self._owned(request, principal)
        if not stored.background:
            raise InvalidRequest(
                "Only background responses can be cancelled.", param="response_id", code="invalid_value"
            )
        cancelled = {**stored.body, "status": "cancelled"}
        if await self.runner.runs.cancel(stored.id, stored.key_id, cancelled):
            self.runner.stop_local(stored.id)
            await send_json(request.send, 200, cancelled)
            return
        current = await self.store.get(stored.id, stored.key_id)
        await send_json(request.send, 200, (current or stored).body)

    async def retrieve(self, request: Request, principal: Principal) -> None:
        asked = retrieve_query(request)  # 400 for a `stream` or `starting_after` it cannot mean
        stored = await self._owned(request, principal)
        if stored.background:
            await self._retrieve_background(request, stored, asked)
            return
        if asked.stream:
            raise InvalidRequest(
                "Only background responses can be streamed from storage; this one was not created "
                "with `background: true`.",
                param="stream",
                code="invalid_value",
            )
        relay = self._native(stored)
        if relay is not None:
            query = [(k, v) for k, v in request.query.items()]
            await self._relayed(request, await relay.responses_get(stored.id, query))
            return
        await send_json(request.send, 200, stored.body)

    async def _retrieve_background(
        self, request: Request, stored: StoredResponse, query: RetrieveQuery
    ) -> None:
        """`?stream=true` replays its events after `starting_after` (default: all of them),
        following it while it runs; else its current state."""
        if not query.stream:
            await send_json(request.send, 200, stored.body)
            return
        await replay(request, self.runner.runs, stored.id, query.starting_after, self.keepalive)

    async def delete(self, request: Request, principal: Principal) -> None:
        stored = await self._owned(request, principal)
        relay = self._native(stored)
        if relay is not None:
            await relay.responses_delete(stored.id)  # the upstream's copy goes too
        await self.store.delete(stored.id, stored.key_id)
        self.runner.stop_local(stored.id)  # a background run of it has nothing left to write to
        await send_json(request.send, 200, {"id": stored.id, "object": "response.deleted", "deleted": True})

    async def input_items(self, request: Request, principal: Principal) -> None:
        stored = await self._owned(request, principal)
        relay = self._native(stored)
        if relay is not None:
            query = [(k, v) for k, v in request.query.items()]
            await self._relayed(request, await relay.responses_input_items(stored.id, query))
            return
        items = stored.input
        if stored.previous_id is not None:  # the whole context it answered: earlier turns first
            chain = await self.store.chain(stored.id, stored.key_id)
            items = [item for turn in chain[:-1] for item in (*turn.input, *turn.output)] + stored.input
        await send_json(request.send, 200, page(items, request.query))

    async def _owned(self, request: Request, principal: Principal) -> StoredResponse:
        response_id = request.params["response_id"]
        stored = await self.store.get(response_id, principal.key_id) if len(response_id) <= MAX_ID else None
        if stored is None:
            raise NotFound(f"Response with id '{response_id}' not found.", code="not_found")
        return stored

    def _native(self, stored: StoredResponse) -> OpenAIProvider | None:
        """The provider holding a natively answered response, if it is still configured."""
        provider = self.gw.providers.get(stored.provider) if stored.native else None
        return provider if isinstance(provider, OpenAIProvider) else None

    async def _relayed(self, request: Request, reply: Reply) -> None:
        await send_reply(request, reply, keepalive=self.keepalive)

    def endpoints(self) -> list[Endpoint]:
        return [
            Endpoint("POST", "/v1/responses", self.create, family="text"),
            Endpoint("GET", "/v1/responses/{response_id}", self.retrieve, family="text"),
            Endpoint("DELETE", "/v1/responses/{response_id}", self.delete, family="text"),
            Endpoint("GET", "/v1/responses/{response_id}/input_items", self.input_items, family="text"),
            Endpoint("POST", "/v1/responses/{response_id}/cancel", self.cancel, family="text"),
        ]


def page(items: list[Json], query: dict[str, str]) -> Json:
    """A list page of input items as OpenAI pages them: `order` desc (default) or asc, `limit`
    1-100 (default 20), `after` an item id."""
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequest("'order' must be asc or desc.", param="order", code="invalid_value")
    limit = limit_param(query, 20, 100)  # ASCII digits: "²" passed isdigit() and failed int()
    ordered = items if order == "asc" else items[::-1]
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") for item in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    data = ordered[:limit]
    return list_page(data, len(ordered) > len(data))
