"""Route planning: priorities, weights, cooldown; the engine's fallback and first-chunk peek."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from unigate.config import GatewayConfig
from unigate.errors import UpstreamFailed
from unigate.providers.base import Provider, ProviderContext, Reply, RouteFailed, StreamBroken, Target
from unigate.routing.catalog import Catalog
from unigate.routing.engine import Router
from unigate.routing.health import RouteHealth


def _catalog(routes: list[dict[str, object]]) -> Catalog:
    cfg = GatewayConfig.model_validate(
        {
            "providers": [{"name": n, "protocol": "openai"} for n in ("a", "b", "c")],
            "models": [{"name": "m", "routes": routes}, {"name": "gpt-*", "routes": [{"provider": "a"}]}],
        }
    )
    providers = {p.name: Provider(p, ProviderContext(Path("."))) for p in cfg.providers}
    return Catalog(cfg, providers)


def test_priority_then_weight() -> None:
    cat = _catalog(
        [
            {"provider": "c", "priority": 1},
            {"provider": "a", "priority": 0, "weight": 9},
            {"provider": "b", "priority": 0, "weight": 1},
        ]
    )
    entry = cat.resolve("m")
    assert entry is not None
    router = Router(RouteHealth(3, 30), random.Random(7))
    leaders = Counter(router.plan(entry, "m")[0].provider.name for _ in range(2000))
    assert 0.85 < leaders["a"] / 2000 < 0.95
    assert all(router.plan(entry, "m")[2].provider.name == "c" for _ in range(50))


def test_pattern_models_pass_the_client_id_upstream() -> None:
    cat = _catalog([{"provider": "a"}])
    entry = cat.resolve("gpt-4o")
    assert entry is not None and entry.is_pattern
    target = Router(RouteHealth(3, 30)).plan(entry, "gpt-4o")[0]
    assert target.upstream_model == "gpt-4o"
    assert cat.resolve("claude") is None and cat.model_names() == ["m"]


def test_cooled_routes_go_last_but_are_still_tried() -> None:
    cat = _catalog([{"provider": "a", "priority": 0}, {"provider": "b", "priority": 1}])
    entry = cat.resolve("m")
    assert entry is not None
    health = RouteHealth(1, 60)
    router = Router(health)
    health.failure("a/m")
    assert [t.provider.name for t in router.plan(entry, "m")] == ["b", "a"]
    health.failure("b/m")
    assert [t.provider.name for t in router.plan(entry, "m")] == ["a", "b"]


async def _events(items: list[bytes | Exception]) -> AsyncIterator[bytes]:
    for item in items:
        if isinstance(item, Exception):
            raise item
        yield item


def test_engine_falls_back_on_route_failure_and_broken_first_chunk() -> None:
    cat = _catalog(
        [{"provider": "a", "priority": 0}, {"provider": "b", "priority": 1}, {"provider": "c", "priority": 2}]
    )
    entry = cat.resolve("m")
    assert entry is not None
    calls: list[str] = []

    async def invoke(target: Target) -> Reply:
        calls.append(target.provider.name)
        if target.provider.name == "a":
            raise RouteFailed("boom")
        if target.provider.name == "b":
            return Reply(stream=_events([StreamBroken("dead")]))
        return Reply(stream=_events([b"data: 1\n\n", b"data: 2\n\n"]))

    async def run() -> list[bytes]:
        reply, target = await Router(RouteHealth(3, 30)).run(entry, "m", invoke)
        assert target.provider.name == "c" and reply.stream is not None
        return [chunk async for chunk in reply.stream]

    assert asyncio.run(run()) == [b"data: 1\n\n", b"data: 2\n\n"]
    assert calls == ["a", "b", "c"]


def test_engine_reports_last_failure() -> None:
    cat = _catalog([{"provider": "a"}])
    entry = cat.resolve("m")
    assert entry is not None

    async def invoke(target: Target) -> Reply:
        raise RouteFailed("slow", status=429, retry_after="3")

    with pytest.raises(UpstreamFailed) as info:
        asyncio.run(Router(RouteHealth(3, 30)).run(entry, "m", invoke))
    assert info.value.status == 429 and info.value.headers == {"retry-after": "3"}
