"""Admin API under /admin/ (admin key as Bearer): providers, models and tasks (keys:
api/admin/keys.py, usage and the request log: api/admin/usage.py).
Not on the hot path, so bodies are validated with pydantic."""

from __future__ import annotations

from typing import Any

from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import NotFound
from unigate.gateway import Gateway
from unigate.tasks.outbox_store import hook_state


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def providers(request: Request) -> None:
        data = [
            {
                "name": p.name,
                "protocol": p.protocol,
                "base_url": p.config.base_url,
                "capabilities": sorted(p.capabilities),
            }
            for p in gw.providers.values()
        ]
        await send_json(request.send, 200, {"object": "list", "data": data})

    async def models(request: Request) -> None:
        health = gw.router.health.snapshot()
        data: list[dict[str, Any]] = []
        for m in gw.config.models:
            routes = [
                {
                    **r.model_dump(exclude_none=True),
                    "health": health.get(
                        f"{r.provider}/{r.model or m.name}",
                        {"consecutive_failures": 0, "cooldown_remaining": 0.0},
                    ),
                }
                for r in m.routes
            ]
            data.append({"name": m.name, "price_per_call": m.price_per_call, "routes": routes})
        await send_json(request.send, 200, {"object": "list", "data": data})

    async def task(request: Request) -> None:
        found = await gw.tasks.store.get(request.params["task_id"])
        if found is None:
            raise NotFound("No such task.", code="task_not_exist")
        ledger = await gw.tasks.store.ledger(found.id)
        events = await gw.tasks.store.events_for(found.id)
        await send_json(
            request.send,
            200,
            {
                "id": found.id,
                "key_id": found.key_id,
                "family": found.family,
                "action": found.action,
                "model": found.model,
                "provider": found.provider,
                "upstream_id": found.upstream_id,
                "status": found.status,
                "progress": found.progress,
                "fail_reason": found.fail_reason,
                "price": found.price,
                "clip_ids": found.clip_ids,
                "poll_attempts": found.poll_attempts,
                "next_poll_at": found.next_poll_at,
                "deadline_at": found.deadline_at,
                "ledger": [{"kind": kind, "amount": amount} for kind, amount in ledger],
                "webhook": hook_state(events),
                "events": events,
                "record": gw.tasks.render(found),
            },
        )

    return [
        Endpoint("GET", "/admin/tasks/{task_id}", task, auth="admin"),
        Endpoint("GET", "/admin/providers", providers, auth="admin"),
        Endpoint("GET", "/admin/models", models, auth="admin"),
    ]
