"""The routed request path every synchronous family shares: model lookup and permission,
rate limit, routing with fallback, sending the reply (body or stream) and usage accounting.
Endpoint modules only parse and validate their input and say how to call a provider."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from unigate.api.serving.relay import OPENAI_FRAMING, Framing, Outcome, send_reply
from unigate.auth.principal import Principal
from unigate.edge.access_log import MODEL, MODEL_NAME, OUTCOME, PROVIDER, ROUTE
from unigate.edge.asgi import ClientDisconnected, Request
from unigate.edge.client_gone import LeaveWatch
from unigate.errors import GatewayError, NotFound, PermissionDenied
from unigate.gateway import Gateway
from unigate.limits.estimate import prompt_tokens
from unigate.limits.service import PENDING, Limits, Ticket
from unigate.providers.base import MediaCall, Reply, Target
from unigate.routing.catalog import ModelEntry

Attempt = Callable[[Target], Awaitable[Reply]]
# Async last step before a reply is sent (the Responses API stores its answer there first).
Finish = Callable[[Reply, Target], Awaitable[Reply]]
_BROKEN: Final = {499: "client_closed"}  # a span's error.type for a stream that did not end cleanly
# Scope key of a batch line's call (batches/lines.py): its batch id, named in its usage record,
# whose price takes the batch discount.
BATCH: Final = "unigate.batch"


# Per-call objects with their own `__init__`, not dataclasses: this module is compiled, and a
# compiled dataclass's generated `__init__` still runs as Python (~250 ns each, per call).
class Admitted:
    """A call admitted ahead of `Serving.run` (None: the key and model have no limits)."""

    __slots__ = ("ticket",)

    def __init__(self, ticket: Ticket | None) -> None:
        self.ticket = ticket


class ServingCall:
    """One synchronous call, as a router hands it to `Serving.run`.

    Given: `request`, `principal`, `model` (the id the client asked for), `endpoint` (the
    operation, as usage records and spans name it: chat, images.generations, ...), `attempt`
    (one route's upstream call), `present` (turns the route's reply into the client's format,
    after routing, so fallback still happens before any byte is sent), `framing`, `payload`
    (the parsed request when it holds text whose tokens count against tokens-per-minute limits
    and budgets), `finish` (awaited with the presented reply before anything is sent) and
    `admitted` (an admission taken earlier, `Serving.admit`, settled here).

    Learnt as the call goes, accounted and traced from there (kept here rather than in an
    object of its own: one allocation less per call): `entry` (the model's, once resolved),
    `started` (`perf_counter` when routing began), `target` (the route that answered), `reply`,
    `first` (when a stream's first upstream event was read; tracing only) and `spent` (tokens
    and money the call used, settled against its ticket exactly once, `_account`)."""

    __slots__ = (
        "admitted",
        "attempt",
        "endpoint",
        "entry",
        "finish",
        "first",
        "framing",
        "model",
        "payload",
        "present",
        "principal",
        "reply",
        "request",
        "spent",
        "started",
        "target",
    )

    def __init__(
        self,
        request: Request,
        principal: Principal,
        model: str,
        endpoint: str,
        attempt: Attempt,
        present: Callable[[Reply], Reply] | None = None,
        framing: Framing = OPENAI_FRAMING,
        payload: Any = None,
        finish: Finish | None = None,
        admitted: Admitted | None = None,
    ) -> None:
        self.request = request
        self.principal = principal
        self.model = model
        self.endpoint = endpoint
        self.attempt = attempt
        self.present = present
        self.framing = framing
        self.payload = payload
        self.finish = finish
        self.admitted = admitted
        self.entry: ModelEntry | None = None
        self.started = 0.0
        self.target: Target | None = None
        self.reply: Reply | None = None
        self.first: float | None = None
        self.spent: tuple[int, float] = (0, 0.0)


def _media_attempt(call: MediaCall) -> Attempt:
    def attempt(target: Target) -> Awaitable[Reply]:
        return target.provider.media(call, target)

    return attempt


class Serving:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.keepalive = gw.config.limits.stream_keepalive
        self.budget_output = gw.config.limits.budget_output_estimate
        self.leave_watch = LeaveWatch()
        self.metrics = gw.metrics
        self.tracing = gw.tracing  # None: tracing off

    def resolve(self, principal: Principal, model: str) -> ModelEntry:
        entry = self.gw.catalog.resolve(model)
        if entry is None:
            message = self.gw.catalog.unknown_model(model, principal)
            raise NotFound(message, code="model_not_found", param="model")
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

    def media(
        self, request: Request, principal: Principal, call: MediaCall, framing: Framing = OPENAI_FRAMING
    ) -> Awaitable[None]:
        """A synchronous audio or image call: routed to the providers' `media`."""
        attempt = _media_attempt(call)
        return self.run(ServingCall(request, principal, call.model, call.op, attempt, framing=framing))

    async def run(self, call: ServingCall) -> None:
        """Route one call for its model within the key's and model's limits, send what the
        chosen route answers, account for it."""
        gw = self.gw
        request = call.request
        scope = request.scope
        scope[MODEL] = call.model  # for the access line (unigate.edge.access_log), 404s and 403s included
        if call.admitted is None:
            # Decided without awaiting as most are (`Limits.admit_call`; `PENDING` when that
            # cannot decide). The metrics' model label (the config's name, bounded) is set
            # before a refusal too.
            entry = self.resolve(call.principal, call.model)
            scope[MODEL_NAME] = entry.name
            ticket = gw.limits.admit_call(call.principal, entry, call.payload, self.budget_output)
            if ticket is PENDING:  # a refusal, or a budget to load first
                tokens, cost = self._estimate(call.principal, entry, call.payload)
                ticket = await gw.limits.admit_pending(call.principal, entry, tokens, cost)
        else:
            entry, ticket = await self._admitted_entry(call, call.admitted)
        run = call
        run.entry, run.started = entry, time.perf_counter()
        watch = self.leave_watch
        token = watch.enter(request.receive)
        try:
            try:
                reply, target = await gw.router.run(entry, call.model, call.attempt)
            except GatewayError as err:
                self._ended(run, err.status, err.code or "error")
                raise
            except asyncio.CancelledError:
                # The client left, or the call was stopped from inside the gateway (a background
                # response's cancel): the upstream request was dropped with the cancellation.
                left = watch.left(token)
                self._ended(run, 499, "client_closed" if left else "cancelled")
                if not left:
                    raise
                raise ClientDisconnected from None
            finally:
                watch.exit(token)
            run.target, run.reply = target, reply
            # A stream's first upstream event has been read by now (routing peeks it).
            if self.tracing is not None and reply.stream is not None:
                run.first = time.perf_counter()
            scope[ROUTE] = target.route_key  # "provider/upstream model"
            scope[PROVIDER] = target.provider.name
            shown = call.present(reply) if call.present is not None else reply
            if call.finish is not None:
                shown = await self._finish(run, call.finish, shown)
            try:
                # A body is sent without `_stream`'s frame.
                outcome = await (
                    send_reply(request, shown, call.framing, self.keepalive)
                    if shown.stream is None
                    else self._stream(request, shown, call.framing)
                )
            except asyncio.CancelledError:
                # Stopped from inside the gateway (a background response cancelled or deleted, a
                # shutdown): what the upstream produced until then is paid for, as when a client
                # leaves; `send_reply` dropped the upstream call.
                scope[OUTCOME] = 499
                self._ended(run, 499, "cancelled")
                raise
            if not outcome.complete:
                scope[OUTCOME] = outcome.status
            self._ended(
                run,
                outcome.status,
                None if outcome.complete else _BROKEN.get(outcome.status, "stream_broken"),
            )
        except BaseException:
            # Settled here and after the block rather than in a `finally`, where compiled code
            # must not await (unigate/compiled.py).
            if not gw.limits.settle_now(ticket, *run.spent):
                await gw.limits.settle(ticket, *run.spent)
            raise
        if not gw.limits.settle_now(ticket, *run.spent):
            await gw.limits.settle(ticket, *run.spent)

    async def _finish(self, run: ServingCall, finish: Finish, shown: Reply) -> Reply:
        """The call's last step before sending (`ServingCall.finish`)."""
        assert run.reply is not None and run.target is not None  # set once a route answered
        try:
            return await finish(shown, run.target)
        except BaseException as exc:
            # The upstream answered, so its tokens are spent even though nothing is sent.
            self._account(run, 499 if isinstance(exc, asyncio.CancelledError) else 500)
            if run.reply.close is not None:
                run.reply.close()
            raise

    async def _stream(self, request: Request, reply: Reply, framing: Framing) -> Outcome:
        """A streamed reply, counted in the open streams' gauge while it lasts."""
        self.metrics.stream_opened()
        try:
            return await send_reply(request, reply, framing, self.keepalive)
        finally:
            self.metrics.stream_closed()

    async def _admitted_entry(
        self, call: ServingCall, admitted: Admitted
    ) -> tuple[ModelEntry, Ticket | None]:
        """The model's entry of a call admitted earlier, and that admission."""
        try:
            entry = self.resolve(call.principal, call.model)
        except GatewayError:
            # Admitted, then the model went away (a config reload).
            await self.gw.limits.settle(admitted.ticket)
            raise
        # The metrics' model label (the config's name, bounded), set before a refusal too.
        call.request.scope[MODEL_NAME] = entry.name
        return entry, admitted.ticket

    async def admit(self, principal: Principal, model: str, payload: Any) -> Admitted:
        """Admit a call now that `run` makes later (a background response: refused at once
        when over a limit, counted once)."""
        entry = self.resolve(principal, model)
        if not Limits.applies(principal, entry):
            return Admitted(None)
        return Admitted(await self._admit(principal, entry, payload))

    async def _admit(self, principal: Principal, entry: ModelEntry, payload: Any) -> Ticket | None:
        """Reserve the call's share of the key's and model's limits: its prompt counted
        locally plus its output cap as tokens, and what that would cost."""
        tokens, cost = self._estimate(principal, entry, payload)
        return await self.gw.limits.admit(principal, entry, tokens, cost)

    def _estimate(self, principal: Principal, entry: ModelEntry, payload: Any) -> tuple[float, float]:
        """What the call is expected to use (`Limits.estimate`)."""
        return self.gw.limits.estimate(principal, entry, payload, self.budget_output)

    def _ended(self, run: ServingCall, status: int, error: str | None) -> None:
        """The call is over: accounted, and traced when tracing is on (`error`: the span's)."""
        self._account(run, status)
        if self.tracing is not None:
            self._trace(run, status, error)

    def _account(self, run: ServingCall, status: int) -> None:
        """Record the call in the usage accounts, and what it used in `run.spent`. A call that
        failed costs nothing; one cut short pays for the tokens it consumed, not the call: its
        prompt, counted locally from the payload when the upstream had not reported it yet (most
        report it only at the end), and the output it produced."""
        call, entry, target, usage = run, run.entry, run.target, run.reply.usage if run.reply else None
        assert entry is not None  # resolved before anything is accounted
        prompt = usage.prompt_tokens if usage else 0
        completion = usage.completion_tokens if usage else 0
        if usage is not None and not prompt and status == 499 and call.payload is not None:
            prompt = prompt_tokens(call.payload)
        prices = entry.prices
        cost = prices.cost(prompt, completion, 1.0 if status < 400 else 0.0)
        batch = call.request.scope.get(BATCH, "")
        if batch and target is not None:
            discount = entry.batch_discount
            cost *= 1.0 - (target.provider.config.batch_discount if discount is None else discount)
        # Positional, in `UsageRecord`'s field order: every call pays this.
        self.gw.usage.record(
            call.principal.key_id,
            call.endpoint,
            call.model,
            target.provider.name if target else "",  # provider
            target.upstream_model if target else "",
            status,
            prompt,
            completion,
            (time.perf_counter() - run.started) * 1000.0,  # latency_ms
            cost,
            time.time(),  # created_at
            batch,
        )
        if target is not None:
            self.metrics.usage(entry.name, target.provider.name, prompt, completion, cost)
        run.spent = (prompt + completion, cost)

    def _trace(self, run: ServingCall, status: int, error: str | None) -> None:
        """The call's span (tracing on only)."""
        assert self.tracing is not None
        call, target, usage = run, run.target, run.reply.usage if run.reply else None
        self.tracing.call(
            operation=call.endpoint,
            model=call.model,
            protocol=target.provider.protocol if target else "",
            provider=target.provider.name if target else "",
            upstream_model=target.upstream_model if target else "",
            route=target.route_key if target else "",
            status=status,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            started=run.started,
            first_chunk=run.first,
            error=error,
            request_id=call.request.request_id,
            traceparent=call.request.header(b"traceparent"),
        )
