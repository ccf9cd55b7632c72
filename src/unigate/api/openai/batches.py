"""OpenAI's Batch API: `POST /v1/batches` (an uploaded .jsonl file of requests to one endpoint),
`GET /v1/batches[/{id}]`, `POST /v1/batches/{id}/cancel`. The engine (`batches/`) runs the lines
as direct calls; this router only checks what it is given and renders the Batch object."""

from __future__ import annotations

from unigate.api.serving import fields
from unigate.api.serving.pages import list_page
from unigate.auth.principal import Principal
from unigate.batches.openai_kind import batch_object, expires
from unigate.batches.service import Batches
from unigate.batches.store import BatchRow
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import Conflict, InvalidRequest, NotFound
from unigate.shapes.batches import BATCH

API = "openai"


class BatchesAPI:
    def __init__(self, batches: Batches) -> None:
        self.batches = batches
        self.limit = batches.gw.config.limits.max_json_body

    async def create(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.limit)
        checked = BATCH.check(payload)
        files = self.batches.openai.files
        found = await files.get(principal.key_id, checked.input_file_id)  # 404 now for another key's
        if found.purpose != "batch":
            raise InvalidRequest(
                f"The file {checked.input_file_id} has purpose '{found.purpose}'; a batch's input file is "
                "uploaded with purpose 'batch'.",
                param="input_file_id",
            )
        batch_id = await self.batches.create(
            "batch_", principal.key_id, API, checked.endpoint, expires_at=expires(),
            input_file_id=checked.input_file_id, metadata=checked.metadata,
        )  # fmt: skip
        await send_json(request.send, 200, batch_object(await self._get(principal, batch_id)))

    async def retrieve(self, request: Request, principal: Principal) -> None:
        row = await self._get(principal, request.params["batch_id"])
        await send_json(request.send, 200, batch_object(row))

    async def list(self, request: Request, principal: Principal) -> None:
        query = request.query
        limit = fields.integer(query, "limit", 1, 100) or 20
        rows = await self.batches.store.page(principal.key_id, API, limit + 1, after=query.get("after"))
        data = [batch_object(r) for r in rows[:limit]]
        await send_json(request.send, 200, list_page(data, len(rows) > limit))

    async def cancel(self, request: Request, principal: Principal) -> None:
        batch_id = request.params["batch_id"]
        row = await self._get(principal, batch_id)
        if not await self.batches.cancel(principal.key_id, batch_id, API):
            row = await self._get(principal, batch_id)
            if row.status not in ("cancelling", "cancelled"):
                raise Conflict(
                    f"Cannot cancel a batch with status '{row.status}'.", code="batch_not_cancellable"
                )
        await send_json(request.send, 200, batch_object(await self._get(principal, batch_id)))

    async def _get(self, principal: Principal, batch_id: str) -> BatchRow:
        row = await self.batches.store.get(principal.key_id, batch_id, API)
        if row is None:
            raise NotFound(f"No batch found with id '{batch_id}'.", param="batch_id")
        return row


def endpoints(batches: Batches) -> list[Endpoint]:
    api = BatchesAPI(batches)
    return [
        Endpoint("POST", "/v1/batches", api.create, family="text"),
        Endpoint("GET", "/v1/batches", api.list, family="text"),
        Endpoint("GET", "/v1/batches/{batch_id}", api.retrieve, family="text"),
        Endpoint("POST", "/v1/batches/{batch_id}/cancel", api.cancel, family="text"),
    ]
