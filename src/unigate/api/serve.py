"""The routed request path every synchronous family shares: model lookup and permission,
rate limit, routing with fallback, sending the reply (body or stream) and usage accounting.
Endpoint modules only parse and validate their input and say how to call a provider."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from unigate.access_log import MODEL, OUTCOME, ROUTE
from unigate.asgi import ClientDisconnected, Request
from unigate.auth.principal import Principal
from unigate.client_gone import LeaveWatch
from unigate.errors import GatewayError, NotFound, PermissionDenied
from unigate.gateway import Gateway
from unigate.providers.base import MediaCall, Reply, Target
from unigate.relay import OPENAI_FRAMING, Framing, send_reply
from unigate.routing.catalog import ModelEntry
from unigate.usage.recorder import UsageRecord

Attempt = Callable[[Target], Awaitable[Reply]]


def media_attempt(call: MediaCall) -> Attempt:
    def attempt(target: Target) -> Awaitable[Reply]:
        return target.provider.media(call, target)

    return attempt


class Serving:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.keepalive = gw.config.limits.stream_keepalive
        self.leave_watch = LeaveWatch()

    def resolve(self, principal: Principal, model: str) -> ModelEntry:
        entry = self.gw.catalog.resolve(model)
        if entry is None:
            raise NotFound(f"The model '{model}' does not exist.", code="model_not_found", param="model")
        if not principal.may_use_model(model):
            raise PermissionDenied(f"This API key may not use the model '{model}'.", code="model_not_allowed")
        # A model that makes another family's output (its config `family`, or the sandbox's
        # kind) needs that family whatever path calls it: a text path to an image model.
        if entry.family != "text" and not principal.may_use_family(entry.family):
            raise PermissionDenied(
                f"This API key may not use the {entry.family} family (the model '{model}' is in it).",
                code="family_not_allowed",
            )
        return entry

    async def run(
        self,
        request: Request,
        principal: Principal | None,
        model: str,
        endpoint: str,
        attempt: Attempt,
        present: Callable[[Reply], Reply] | None = None,
        framing: Framing = OPENAI_FRAMING,
    ) -> None:
        """Route one call for `model`, send what the chosen route answers, account for it."""
        assert principal is not None
        gw = self.gw
        scope = request.scope
        scope[MODEL] = model  # for the access line (unigate.access_log), 404s and 403s included
        entry = self.resolve(principal, model)
        extra = []
        if principal.rpm:
            remaining = gw.limiter.hit(principal.key_id, principal.rpm)
            extra = [
                (b"x-ratelimit-limit-requests", str(principal.rpm).encode()),
                (b"x-ratelimit-remaining-requests", str(remaining).encode()),
            ]
        started = time.perf_counter()
        watch = self.leave_watch
        token = watch.enter(request.receive)
        try:
            reply, target = await gw.router.run(entry, model, attempt)
        except GatewayError as err:
            self._account(principal, endpoint, model, entry, None, None, err.status, started)
            raise
        except asyncio.CancelledError:
            if not watch.left(token):
                raise
            # The client left mid-call: the upstream request was dropped with the cancellation.
            self._account(principal, endpoint, model, entry, None, None, 499, started)
            raise ClientDisconnected from None
        finally:
            watch.exit(token)
        scope[ROUTE] = target.route_key  # "provider/upstream model"
        reply.headers.extend(extra)
        shown = present(reply) if present is not None else reply
        outcome = await send_reply(request, shown, framing, self.keepalive)
        if not outcome.complete:
            scope[OUTCOME] = outcome.status
        self._account(principal, endpoint, model, entry, target, reply, outcome.status, started)

    def _account(
        self,
        principal: Principal,
        endpoint: str,
        model: str,
        entry: ModelEntry,
        target: Target | None,
        reply: Reply | None,
        status: int,
        started: float,
    ) -> None:
        usage = reply.usage if reply else None
        self.gw.usage.record(
            UsageRecord(
                key_id=principal.key_id,
                endpoint=endpoint,
                model=model,
                provider=target.provider.name if target else "",
                upstream_model=target.upstream_model if target else "",
                status=status,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                latency_ms=(time.perf_counter() - started) * 1000.0,
                cost=entry.price_per_call if status < 400 else 0.0,
                created_at=time.time(),
            )
        )
