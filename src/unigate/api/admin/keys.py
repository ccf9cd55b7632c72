"""Admin API for API keys (admin key as Bearer): create, list, read, change and revoke.
Keys are made and changed by the service `unigate keys` uses too (api/admin/key_service.py)."""

from __future__ import annotations

from unigate.api.admin.key_service import KeyInputError, KeyService, key_changes, new_key
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway

MAX_BODY = 1024 * 1024


def endpoints(gw: Gateway) -> list[Endpoint]:
    service = KeyService(gw.keys, gw.key_cache)

    async def create_key(request: Request) -> None:
        _raw, payload = await request.json_object(MAX_BODY)
        try:
            spec = new_key(payload)
        except KeyInputError as exc:
            raise InvalidRequest(exc.message, param=exc.field, code="invalid_value") from None
        created = await service.create(spec)
        record = created.record
        body = {"key": created.plain, **record.public_view(), "webhook_secret": record.webhook_secret}
        await send_json(request.send, 201, body)

    async def list_keys(request: Request) -> None:
        records = await gw.keys.list_all()
        await send_json(request.send, 200, {"object": "list", "data": [r.public_view() for r in records]})

    async def get_key(request: Request) -> None:
        record = await gw.keys.get(request.params["key_id"])
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        await send_json(request.send, 200, {**record.public_view(), "webhook_secret": record.webhook_secret})

    async def update_key(request: Request) -> None:
        _raw, payload = await request.json_object(MAX_BODY)
        try:
            changes = key_changes(payload)
        except KeyInputError as exc:
            raise InvalidRequest(exc.message, param=exc.field, code="invalid_value") from None
        record = await service.update(request.params["key_id"], changes)
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        await send_json(request.send, 200, record.public_view())

    async def revoke_key(request: Request) -> None:
        record = await service.revoke(request.params["key_id"])
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        await send_json(request.send, 200, record.public_view())

    return [
        Endpoint("POST", "/admin/keys", create_key, auth="admin"),
        Endpoint("GET", "/admin/keys", list_keys, auth="admin"),
        Endpoint("GET", "/admin/keys/{key_id}", get_key, auth="admin"),
        Endpoint("PATCH", "/admin/keys/{key_id}", update_key, auth="admin"),
        Endpoint("DELETE", "/admin/keys/{key_id}", revoke_key, auth="admin"),
    ]
