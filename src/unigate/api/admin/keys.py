"""Admin API for API keys (admin key as Bearer): create, list, read, change and revoke.
Bodies are validated with the models `unigate keys` uses too (api/admin/key_spec.py)."""

from __future__ import annotations

from pydantic import ValidationError

from unigate.api.admin.key_spec import KeyCreate, KeyUpdate, validation_message
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def create_key(request: Request, _: Principal | None) -> None:
        _raw, payload = await request.json_object(1024 * 1024)
        try:
            spec = KeyCreate.model_validate(payload)
        except ValidationError as exc:
            message, field = validation_message(exc)
            raise InvalidRequest(message, param=field, code="invalid_value") from None
        plain, record = await gw.keys.create(
            spec.name,
            spec.models,
            list(spec.families),
            spec.rpm,
            spec.budget,
            spec.expires_at,
            tpm=spec.tpm,
            budget_period=spec.budget_period,
        )
        gw.key_cache.forget_misses()
        await send_json(
            request.send, 201, {"key": plain, **record.public_view(), "webhook_secret": record.webhook_secret}
        )

    async def list_keys(request: Request, _: Principal | None) -> None:
        records = await gw.keys.list_all()
        await send_json(request.send, 200, {"object": "list", "data": [r.public_view() for r in records]})

    async def get_key(request: Request, _: Principal | None) -> None:
        record = await gw.keys.get(request.params["key_id"])
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        await send_json(request.send, 200, {**record.public_view(), "webhook_secret": record.webhook_secret})

    async def update_key(request: Request, _: Principal | None) -> None:
        _raw, payload = await request.json_object(1024 * 1024)
        try:
            changes = KeyUpdate.model_validate(payload).changes()
        except ValidationError as exc:
            message, field = validation_message(exc)
            raise InvalidRequest(message, param=field, code="invalid_value") from None
        except ValueError as exc:
            raise InvalidRequest(str(exc), param=str(exc).split(":")[0], code="invalid_value") from None
        record = await gw.keys.update(request.params["key_id"], changes)
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        gw.key_cache.invalidate(record.key_hash)
        await send_json(request.send, 200, record.public_view())

    async def revoke_key(request: Request, _: Principal | None) -> None:
        record = await gw.keys.revoke(request.params["key_id"])
        if record is None:
            raise NotFound("No such key.", code="key_not_found")
        gw.key_cache.invalidate(record.key_hash)
        await send_json(request.send, 200, record.public_view())

    return [
        Endpoint("POST", "/admin/keys", create_key, auth="admin"),
        Endpoint("GET", "/admin/keys", list_keys, auth="admin"),
        Endpoint("GET", "/admin/keys/{key_id}", get_key, auth="admin"),
        Endpoint("PATCH", "/admin/keys/{key_id}", update_key, auth="admin"),
        Endpoint("DELETE", "/admin/keys/{key_id}", revoke_key, auth="admin"),
    ]
