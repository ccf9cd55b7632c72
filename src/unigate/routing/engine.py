"""Execute a call over a model's routes: lowest priority value first, weighted random order
within a priority, cooled-down routes last. A route is abandoned for the next one only while
nothing has reached the client: for streams the first event is read before committing."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar

from unigate.errors import UpstreamRejected
from unigate.providers.base import Reply, RouteFailed, Target, Unsupported, scrubbed
from unigate.providers.upstream_status import client_error
from unigate.routing.catalog import ModelEntry, Route
from unigate.routing.health import RouteHealth
from unigate.routing.peek import peeked

if TYPE_CHECKING:
    from unigate.observability.metrics import Metrics

log: Final = logging.getLogger("unigate.routing")

T = TypeVar("T")


class Router:
    def __init__(
        self, health: RouteHealth, rng: random.Random | None = None, metrics: Metrics | None = None
    ) -> None:
        self.health = health
        self._rng = rng or random.Random()
        self.metrics = metrics  # upstream errors, fallbacks and cooldowns by route

    def plan(self, entry: ModelEntry, model: str) -> list[Target]:
        if len(entry.routes) == 1:
            # The common case: nothing to order, so reuse one Target per (model entry, id).
            target = entry.targets.get(model)
            if target is None:
                route = entry.routes[0]
                target = Target(
                    route.provider, route.upstream_model or model, route.timeouts, route.key(model)
                )
                if len(entry.targets) < 10_000:
                    entry.targets[model] = target
            return [target]
        ordered: list[Route] = []
        group: list[Route] = []
        for route in entry.routes:
            if group and route.priority != group[0].priority:
                ordered.extend(self._weighted(group))
                group = []
            group.append(route)
        ordered.extend(self._weighted(group))
        targets = [Target(r.provider, r.upstream_model or model, r.timeouts, r.key(model)) for r in ordered]
        healthy = [t for t in targets if not self.health.is_cooled(t.route_key)]
        # When every route is cooling down, trying them beats refusing outright.
        return healthy + [t for t in targets if t not in healthy] if healthy else targets

    def _weighted(self, group: list[Route]) -> list[Route]:
        if len(group) < 2:
            return group
        # Efraimidis-Spirakis: an order in which each route leads with probability ∝ weight.
        return sorted(group, key=lambda r: self._rng.random() ** (1.0 / r.weight), reverse=True)

    def run(
        self, entry: ModelEntry, model: str, invoke: Callable[[Target], Awaitable[T]]
    ) -> Awaitable[tuple[T, Target]]:
        """The first route's answer that did not fail, and that route's target. (Returns
        `run_targets`' coroutine rather than awaiting it: one frame less per resumption.)"""
        return self.run_targets(self.plan(entry, model), invoke)

    async def run_targets(
        self, targets: list[Target], invoke: Callable[[Target], Awaitable[T]]
    ) -> tuple[T, Target]:
        last: RouteFailed | None = None
        last_provider = ""
        unsupported: Unsupported | None = None
        for i, target in enumerate(targets):
            try:
                reply = await invoke(target)
                if isinstance(reply, Reply) and reply.stream is not None:
                    reply.stream = await peeked(reply)
            except Unsupported as exc:
                # A chat-only upstream among an embedding model's routes: skipped, not failed.
                log.debug("route %s skipped: %s", target.route_key, exc.message)
                unsupported = unsupported or exc
                continue
            except UpstreamRejected as rejected:
                # Relayed to the client: every adapter's rejection passes here, so none can
                # echo its provider's credentials (an upstream quoting what it received).
                scrubbed(rejected, target.provider.redactor)
                raise
            except RouteFailed as failure:
                scrubbed(failure, target.provider.redactor)  # logged, and the last one relayed
                last, last_provider = failure, target.provider.name
                # Said before the cooldown line the health check may add, so they read in order.
                _log_failure(targets, i, failure)
                cooled = self.health.failure(target.route_key)
                if self.metrics is not None:
                    self.metrics.upstream_failed(target.route_key, failure.status, i + 1 < len(targets))
                    if cooled:
                        self.metrics.cooldowns.inc((target.route_key,))
                continue
            self.health.success(target.route_key)
            return reply, target
        if last is None:
            assert unsupported is not None  # a model always has at least one route
            raise unsupported
        raise client_error(
            last, f"All upstream routes failed. Last error, from provider {last_provider}: {last.message}"
        )


def _log_failure(targets: list[Target], index: int, failure: RouteFailed) -> None:
    """One line per failed attempt: the route, the cause (adapters' messages are fixed
    phrases with a status, never upstream bodies or credentials), and what happens next."""
    route = targets[index].route_key
    cause = failure.message.rstrip(".")
    if index + 1 < len(targets):
        log.warning(
            "route %s failed: %s; falling back to route %s",
            route,
            cause,
            targets[index + 1].route_key,
        )
    else:
        log.warning(
            "route %s failed: %s; giving up, %s",
            route,
            cause,
            "no other route" if len(targets) == 1 else f"all {len(targets)} routes failed",
        )
