"""Anthropic's Message Batches: `POST /v1/messages/batches` (inline requests), `GET
/v1/messages/batches[/{id}]`, `POST .../{id}/cancel`, `DELETE .../{id}` (ended batches only) and
`GET .../{id}/results` (JSONL, streamed). Errors in Anthropic's shape. The engine (`batches/`)
runs each request as a direct `/v1/messages` call."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.public_url import configured_base, public_base
from unigate.auth.principal import Principal
from unigate.batches.anthropic_kind import ENDPOINT, batch_object, check_requests, results
from unigate.batches.openai_kind import expires
from unigate.batches.service import Batches
from unigate.batches.store import ENDED, BatchRow
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound

API = "anthropic"


class MessageBatchesAPI:
    def __init__(self, batches: Batches) -> None:
        self.batches = batches
        self.gw = batches.gw
        # A batch's requests come in its body: room for many messages requests.
        self.limit = max(self.gw.config.limits.max_json_body, 256 * 1024 * 1024)

    def _base(self, request: Request) -> str:
        return public_base(request, configured_base(self.gw))

    async def create(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.limit)
        lines = check_requests(payload, principal, self.gw.catalog, self.gw.config.batches.max_lines)
        key = principal.key_id
        made = expires()
        batch_id = await self.batches.create("msgbatch_", key, API, ENDPOINT, expires_at=made, lines=lines)
        row = await self._get(principal, batch_id)
        await send_json(request.send, 200, batch_object(row, self._base(request)))

    async def retrieve(self, request: Request, principal: Principal) -> None:
        row = await self._get(principal, request.params["batch_id"])
        await send_json(request.send, 200, batch_object(row, self._base(request)))

    async def list(self, request: Request, principal: Principal) -> None:
        query = request.query
        limit = fields.integer(query, "limit", 1, 1000) or 20
        after, before = query.get("after_id"), query.get("before_id")
        if after is not None and before is not None:
            raise InvalidRequest("Give after_id or before_id, not both.", param="after_id")
        # Anthropic pages newest first: `after_id` goes to older batches, `before_id` to newer.
        rows = await self.batches.store.page(principal.key_id, API, limit + 1, after=after, before=before)
        more = len(rows) > limit
        rows = rows[:limit] if before is None else rows[-limit:]
        base = self._base(request)
        data = [batch_object(r, base) for r in rows]
        await send_json(
            request.send,
            200,
            {
                "data": data,
                "has_more": more,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            },
        )

    async def cancel(self, request: Request, principal: Principal) -> None:
        batch_id = request.params["batch_id"]
        await self._get(principal, batch_id)
        await self.batches.cancel(principal.key_id, batch_id, API)  # an ended batch stays as it is
        row = await self._get(principal, batch_id)
        await send_json(request.send, 200, batch_object(row, self._base(request)))

    async def delete(self, request: Request, principal: Principal) -> None:
        batch_id = request.params["batch_id"]
        row = await self._get(principal, batch_id)
        if row.status not in ENDED or not await self.batches.store.delete(principal.key_id, batch_id, API):
            raise InvalidRequest(
                f"Batch {batch_id} is still processing; cancel it and wait for it to end before deleting it."
            )
        await send_json(request.send, 200, {"id": batch_id, "type": "message_batch_deleted"})

    async def results(self, request: Request, principal: Principal) -> None:
        row = await self._get(principal, request.params["batch_id"])
        if row.status not in ENDED:
            raise NotFound(f"Batch {row.id} has not ended yet: its results are not available.")
        headers = [(b"content-type", b"application/x-jsonl"), (b"x-request-id", request.request_id.encode())]
        await request.send({"type": "http.response.start", "status": 200, "headers": headers})
        async for chunk in results(self.batches.store, row):
            await request.send({"type": "http.response.body", "body": chunk, "more_body": True})
        await request.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _get(self, principal: Principal, batch_id: str) -> BatchRow:
        row = await self.batches.store.get(principal.key_id, batch_id, API)
        if row is None:
            raise NotFound(f"No message batch found with id '{batch_id}'.")
        return row


def endpoints(batches: Batches) -> list[Endpoint]:
    api = MessageBatchesAPI(batches)
    path = "/v1/messages/batches"
    return [
        Endpoint("POST", path, api.create, family="text", style="anthropic"),
        Endpoint("GET", path, api.list, family="text", style="anthropic"),
        Endpoint("GET", path + "/{batch_id}", api.retrieve, family="text", style="anthropic"),
        Endpoint("DELETE", path + "/{batch_id}", api.delete, family="text", style="anthropic"),
        Endpoint("POST", path + "/{batch_id}/cancel", api.cancel, family="text", style="anthropic"),
        Endpoint("GET", path + "/{batch_id}/results", api.results, family="text", style="anthropic"),
    ]
