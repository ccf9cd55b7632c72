"""Background responses (`background: true`): accepted at once as `queued`, then run by this
process through the same routed path as any call (`TextAPI.serve`: limits, fallback, usage,
metrics), with a sink in place of the client that writes the stream's events to the database.

Clients poll `GET /v1/responses/{id}` (`queued` -> `in_progress` -> `completed`), replay the
events with `?stream=true&starting_after=N` (`replay`, which follows a running response to its
end), or cancel it. A worker holds a lease on each response it runs, renewed every few seconds;
the same renewal notices a cancel made on another process. A lease that lapses (its process
died) lets any gateway process sharing the database claim the response and run it again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import secrets
import time
from collections.abc import Coroutine
from typing import Any

from unigate.api.openai.responses_call import KEEPALIVE, ContextBounds, ResponseCall, load_conversation
from unigate.api.openai.text import TextAPI
from unigate.api.serving.hosted_tools import HostedTools
from unigate.api.serving.serve import Admitted
from unigate.auth.principal import Principal
from unigate.background import Periodic
from unigate.edge.access_log import ROUTE
from unigate.edge.asgi import Message, Request
from unigate.errors import GatewayError
from unigate.gateway import Gateway
from unigate.responses.runs import BackgroundRuns, DueRun
from unigate.responses.store import PENDING
from unigate.translate.responses_request import parse_request
from unigate.translate.responses_stream import QUEUED_EVENTS
from unigate.translate.sse import event_data, json_event, split_events

log = logging.getLogger("unigate.responses")

Json = dict[str, Any]
RENEW_SECONDS = 2.0  # at most; a third of the lease when that is shorter
FLUSH_SECONDS = 0.1  # a run's events are written in batches at most this far apart
_SEQUENCE = re.compile(rb'"sequence_number"\s*:\s*(\d+)')


class _Sink:
    """Stands in for the client of a background run: its events go to the database, in
    batches, and it never disconnects. `seal` writes the final state with the events not yet
    written, in one transaction; after it (or once the response stopped being pending, e.g.
    cancelled) nothing more is written."""

    def __init__(self, runs: BackgroundRuns, response_id: str, owner: str) -> None:
        self.runs = runs
        self.id = response_id
        self.owner = owner  # the lease holder writing: a run whose lease was taken over writes nothing
        self.last = QUEUED_EVENTS - 1  # the accepted response's events are written already
        self.sealed = False
        self._pending: list[tuple[int, bytes]] = []
        self._flushed = time.monotonic()
        self._never = asyncio.Event()
        self.scope: dict[str, Any] = {}

    def request(self) -> Request:
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/v1/responses",
            "headers": [],
            "query_string": b"",
        }
        self.scope = scope
        return Request(scope, self.receive, self.send, "bg-" + self.id[-12:])

    @property
    def route(self) -> str:
        return str(self.scope.get(ROUTE, "-"))

    async def receive(self) -> Message:
        await self._never.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] != "http.response.body" or self.sealed:
            return
        self._take(message.get("body", b""))
        if self._pending and (
            not message.get("more_body", False) or time.monotonic() - self._flushed >= FLUSH_SECONDS
        ):
            await self.flush()

    def _take(self, data: bytes) -> None:
        for event in split_events(data):
            found = _SEQUENCE.search(event)
            if found is not None and event_data(event):  # keep-alive comments are no events
                self.last = int(found.group(1))
                self._pending.append((self.last, event))

    async def flush(self) -> None:
        events, self._pending = self._pending, []
        self._flushed = time.monotonic()
        if (
            events
            and not self.sealed
            and not await _outliving(self.runs.append(self.id, self.owner, events), self.id)
        ):
            self.sealed = True  # no longer pending (cancelled, deleted) or taken over meanwhile

    async def seal(self, body: Json, tail: bytes) -> bool:
        self._take(tail)
        events, self._pending = self._pending, []
        if self.sealed:
            return False
        # Sealed before the write: a flush while it runs (the run cancelled by a stop) must
        # not write these events a second time, which failed the final state on their keys.
        self.sealed = True
        try:
            return await _outliving(self.runs.set_state(self.id, self.owner, body, events), self.id)
        except Exception:  # not a cancel, which leaves the write going on
            self.sealed, self._pending = False, events + self._pending  # for the failure's final state
            raise


async def _outliving(write: Coroutine[Any, Any, bool], response_id: str) -> bool:
    """`write`, run to its end even when the run is cancelled meanwhile (a stop, a cancel),
    whose failure then has nobody to raise to and is logged here."""
    task = asyncio.ensure_future(write)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(functools.partial(_log_unawaited, response_id))
        raise


def _log_unawaited(response_id: str, task: asyncio.Future[bool]) -> None:
    if not task.cancelled() and (err := task.exception()) is not None:
        log.warning(
            "background response %s: a write after its run stopped failed: %s: %s",
            response_id,
            type(err).__name__,
            err,
        )


class BackgroundRunner:
    def __init__(self, gw: Gateway, text: TextAPI) -> None:
        self.gw = gw
        self.text = text
        self.runs = BackgroundRuns(gw.engine)
        self.owner = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.lease_seconds = gw.config.responses.background_lease_seconds
        self.bounds = ContextBounds.of(gw.config.responses)
        self.hosted = HostedTools(gw)  # a background run honours `hosted_tools` like a direct one
        # Lapsed leases are looked for every third of a lease: a dead worker's responses
        # resume within about 1.3 leases.
        self._pickup_every = self.lease_seconds / 3
        self._last_pickup = 0.0
        self._loop = Periodic("responses-background", self._step, min(RENEW_SECONDS, self._pickup_every))

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        running = list(self.tasks.items())
        for _, task in running:
            task.cancel()
        await asyncio.gather(*(task for _, task in running), return_exceptions=True)
        # Another worker (or this one, restarted) takes them up at once.
        await self.runs.release(self.owner, [rid for rid, _ in running])

    def lease(self) -> tuple[str, float]:
        return self.owner, time.time() + self.lease_seconds

    def launch(
        self, principal: Principal, payload: Json, accepted: Json, admitted: Admitted | None = None
    ) -> None:
        """Run an accepted response; `admitted`: its admission under the key's limits, which
        the run settles (None: a run taken over from a lapsed lease is admitted anew)."""
        rid = str(accepted["id"])
        task = asyncio.create_task(self._run(principal, payload, accepted, admitted), name=f"response {rid}")
        self.tasks[rid] = task
        task.add_done_callback(lambda _: self.tasks.pop(rid, None))

    def stop_local(self, response_id: str) -> None:
        task = self.tasks.get(response_id)
        if task is not None:
            task.cancel()

    async def _run(
        self, principal: Principal, payload: Json, accepted: Json, admitted: Admitted | None
    ) -> None:
        rid = str(accepted["id"])
        sink = _Sink(self.runs, rid, self.owner)
        unsettled = admitted  # settled by `serve` once it gets it, else here
        try:
            req = parse_request({**payload, "stream": True})  # events are what gets replayed
            chain = []
            if req.previous_response_id is not None:
                chain = await load_conversation(
                    self.gw.responses, req.previous_response_id, principal.key_id, self.bounds
                )
            call = ResponseCall(
                self.gw.responses, req, principal.key_id, chain, None, (sink, accepted), self.hosted
            )
            if not await self.runs.set_state(rid, self.owner, {**accepted, "status": "in_progress"}):
                return  # cancelled before it started
            serve = self.text.serve
            unsettled = None
            await serve(
                sink.request(),
                principal,
                call.text_call(),
                framing=call.framing,
                native=call.route,
                finish=call.finish,
                admitted=admitted,
            )
            await sink.flush()
            status = await self.runs.status(rid)
            if status in PENDING:  # a stream that broke without a final state
                await self._fail(
                    sink, accepted, "server_error", "The upstream stream ended before completion."
                )
                status = "failed"
            # Background runs have no access line of their own: this is theirs.
            log.info(
                "background response %s %s model=%s route=%s key=%s",
                rid,
                status,
                req.model,
                sink.route,
                principal.key_id,
            )
        except asyncio.CancelledError:
            await sink.flush()
            log.info("background response %s stopped (cancelled, deleted or shut down)", rid)
            raise
        except GatewayError as err:  # refused or failed before any event: routing, limits, input
            await sink.flush()
            await self._fail(sink, accepted, err.code or err.type, err.message)
            log.warning(
                "background response %s failed before any event: %s (%s) key=%s",
                rid,
                err.message,
                err.status,
                principal.key_id,
            )
        except Exception:
            log.exception("background response %s failed", rid)
            await sink.flush()
            await self._fail(sink, accepted, "server_error", "The gateway failed to run the response.")
        finally:
            if unsettled is not None:
                await self.gw.limits.settle(unsettled.ticket)

    async def _fail(self, sink: _Sink, accepted: Json, code: str, message: str) -> None:
        body = {**accepted, "status": "failed", "error": {"code": code, "message": message}}
        seq = sink.last + 1
        data = json_event(
            {"type": "response.failed", "sequence_number": seq, "response": body}, "response.failed"
        )
        await sink.seal(body, data)

    async def _step(self) -> None:
        if self.tasks:
            gone = await self.runs.renew(self.owner, list(self.tasks), time.time() + self.lease_seconds)
            for rid in gone:  # cancelled through another process
                self.stop_local(rid)
        now = time.monotonic()
        if now - self._last_pickup >= self._pickup_every:
            self._last_pickup = now
            for run in await self.runs.due(time.time()):
                if run.id not in self.tasks:
                    await self._take_over(run)

    async def _take_over(self, run: DueRun) -> None:
        if not await self.runs.claim(run, self.owner, time.time() + self.lease_seconds, QUEUED_EVENTS):
            return  # another worker was first
        accepted = {**run.body, "status": "queued"}
        principal = await self.gw.keys.get(run.key_id)
        now = time.time()
        if principal is None or principal.revoked_at is not None or (principal.expires_at or now + 1) <= now:
            await self._fail(
                _Sink(self.runs, run.id, self.owner),
                accepted,
                "invalid_api_key",
                "The API key is no longer valid.",
            )
            return
        log.info("background response %s taken over after its worker's lease lapsed", run.id)
        self.launch(principal, run.request, accepted)


async def replay(
    request: Request, runs: BackgroundRuns, response_id: str, after: int, keepalive: float
) -> None:
    """A background response's events after `after` as a stream, following the response
    until it is no longer pending (polling the database: the run may be on another process),
    with keep-alive comments through silences."""
    rid = (b"x-request-id", request.request_id.encode())
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), rid]
    await request.send({"type": "http.response.start", "status": 200, "headers": headers})
    left = asyncio.ensure_future(_disconnected(request))
    try:
        last, delay, quiet_since, finished = after, 0.02, time.monotonic(), False
        while not left.done():
            events = await runs.events_after(response_id, last)
            if events:
                last = events[-1][0]
                await request.send(
                    {"type": "http.response.body", "body": b"".join(d for _, d in events), "more_body": True}
                )
                delay, quiet_since = 0.02, time.monotonic()
                continue
            if finished:
                break
            finished = await runs.status(response_id) not in PENDING  # then one last read
            if finished:
                continue
            if keepalive > 0 and time.monotonic() - quiet_since >= keepalive:
                await request.send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                quiet_since = time.monotonic()
            await asyncio.wait({left}, timeout=delay)
            delay = min(delay * 2, 0.5)
    finally:
        left.cancel()
    await request.send({"type": "http.response.body", "body": b"", "more_body": False})


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
