"""The batch engine: a worker runs a batch while it holds the batch's lease (renewed every
few seconds, as background responses do), its lines through `LineCaller` (the direct call's
own path) with bounded concurrency, paced to a share of the key's limits, retrying what an
upstream or the key's limiter asked to retry, and committing results in groups
(`BatchStore.commit`: a line's result and its done state in one transaction).

A batch whose worker died (its lease lapsed) is claimed by another worker of any process
sharing the database, which runs only the lines still pending. A line whose call ended but
whose commit had not happened when the process died is sent again: its earlier result was
never stored, so no line is ever written twice.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Mapping

import orjson

from unigate.auth.principal import Principal
from unigate.background import Periodic
from unigate.batches.kinds import BatchKind, Refused
from unigate.batches.lines import LineCaller
from unigate.batches.pacing import Pacer
from unigate.batches.relay import Relay, plan
from unigate.batches.store import BatchRow, BatchStore, LineResult, PendingLine
from unigate.errors import GatewayError
from unigate.gateway import Gateway

log = logging.getLogger("unigate.batches")

RENEW_SECONDS = 1.0  # leases renewed, cancels noticed and lapsed batches looked for this often
FLUSH_SECONDS = 0.2  # finished lines wait at most this long for their commit
FLUSH_LINES = 200
_CHUNK = 500  # pending lines read at a time
_MAX_BACKOFF = 60.0


class _Run:
    """One batch being run here: its stop signal and the results waiting for their commit."""

    def __init__(self, row: BatchRow) -> None:
        self.row = row
        self.stop = asyncio.Event()  # cancelled, expired, lease lost or shutting down
        self.lost = False
        self.cancelling = False
        self.results: list[LineResult] = []
        self.flushed = time.monotonic()
        self.lock = asyncio.Lock()


class BatchRunner:
    def __init__(self, gw: Gateway, caller: LineCaller, kinds: Mapping[str, BatchKind]) -> None:
        self.gw = gw
        self.caller = caller
        self.kinds = kinds
        self.store = BatchStore(gw.engine)
        self.relay = Relay(gw, self.store)
        self.config = gw.config.batches
        self.owner = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.runs: dict[str, _Run] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._pickup_every = self.config.lease_seconds / 3
        self._last_pickup = 0.0
        self._loop = Periodic("batches", self._step, RENEW_SECONDS)

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        running = list(self.tasks.items())
        for run in self.runs.values():
            run.stop.set()
        for _, task in running:
            task.cancel()
        await asyncio.gather(*(task for _, task in running), return_exceptions=True)
        await self.store.release(self.owner, [bid for bid, _ in running])

    def lease(self) -> tuple[str, float]:
        return self.owner, time.time() + self.config.lease_seconds

    def launch(self, batch_id: str) -> None:
        """Run a batch this worker holds the lease of."""
        if batch_id in self.tasks:
            return
        task = asyncio.create_task(self._run(batch_id), name=f"batch {batch_id}")
        self.tasks[batch_id] = task
        task.add_done_callback(lambda _: self._forget(batch_id))

    def _forget(self, batch_id: str) -> None:
        self.tasks.pop(batch_id, None)
        self.runs.pop(batch_id, None)

    def stop_local(self, batch_id: str) -> None:
        """A cancel made here: no new line starts from now."""
        run = self.runs.get(batch_id)
        if run is not None:
            run.cancelling = True
            run.stop.set()

    # -- the loop ----------------------------------------------------------------------------

    async def _step(self) -> None:
        if self.runs:
            held = await self.store.renew(
                self.owner, list(self.runs), time.time() + self.config.lease_seconds
            )
            for bid, run in list(self.runs.items()):
                status = held.get(bid)
                if status is None:
                    run.lost = True
                    run.stop.set()
                elif status != "cancelling" and await self._principal(run.row) is None:
                    # The key was revoked or expired: its batch stops spending as a cancel would.
                    log.info("batch %s cancelled: its API key is no longer valid", bid)
                    await self.store.request_cancel(run.row.key_id, bid, run.row.api)
                    run.cancelling = True
                    run.stop.set()
                elif status == "cancelling" or time.time() >= run.row.expires_at:
                    run.cancelling = status == "cancelling"
                    run.stop.set()
        now = time.monotonic()
        if now - self._last_pickup >= self._pickup_every:
            self._last_pickup = now
            for bid, seen in await self.store.due(time.time()):
                if bid not in self.tasks and await self.store.claim(bid, seen, *self.lease()):
                    log.info("batch %s taken up (its worker's lease lapsed or was given back)", bid)
                    self.launch(bid)

    # -- one batch ---------------------------------------------------------------------------

    async def _run(self, batch_id: str) -> None:
        try:
            row = await self.store.load(batch_id)
            if row is None:
                return
            run = _Run(row)
            self.runs[batch_id] = run
            principal = await self._principal(row)
            if principal is None:
                await self._fail(
                    row, [{"code": "invalid_api_key", "message": "The API key is no longer valid."}]
                )
                return
            if row.status == "validating":
                try:
                    lines = await self.kinds[row.api].prepare(row, principal)
                except Refused as refused:
                    await self._fail(row, refused.errors)
                    return
                if not await self.store.start(batch_id, self.owner, lines):
                    row = await self.store.load(batch_id) or row
                    if row.status != "cancelling":
                        return
                else:
                    row = await self.store.load(batch_id) or row
                run.row = row
            if row.status == "in_progress" and time.time() < row.expires_at:
                if not await self._relayed(run, principal):
                    await self._lines(run, principal)
                if run.lost:
                    log.warning("batch %s: lease lost to another worker; this run stops", batch_id)
                    return
            await self._end(batch_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            # The lease lapses and another worker (or this one) takes the batch up again.
            log.exception("batch %s: its run failed; it resumes once its lease lapses", batch_id)

    async def _relayed(self, run: _Run, principal: Principal) -> bool:
        """Relay the batch to a vendor's own batch API when it can go there whole (`relay.py`);
        False: the gateway runs its lines."""
        row, upstream = run.row, run.row.upstream
        if upstream.endswith("/"):  # a submit was under way when its worker stopped
            adopted = await self.relay.adopt(row, self.owner)
            if adopted is None:
                run.lost = True
                return True
            upstream = adopted
        if not upstream and row.processing == row.total:
            pending = await self.store.pending(row.id, -1, row.total + 1)
            chosen = plan(self.gw, row, pending, principal.budget is not None)
            if chosen is None:
                return False
            try:
                upstream = await self.relay.submit(row, self.owner, chosen, pending) or ""
            except GatewayError as err:
                # The vendor refused or was unreachable: the gateway runs the lines itself.
                log.warning(
                    "batch %s: relaying to %s failed (%s: %s); the gateway runs its lines",
                    row.id, chosen.provider.name, err.status, err.message,
                )  # fmt: skip
                return False
            if not upstream:
                run.lost = True
                return True
        if not upstream:
            return False
        if not await self.relay.follow(row, self.owner, upstream, run.stop, lambda: run.cancelling):
            run.lost = True  # lost or stopping: whoever holds the lease next follows it on
        return True

    async def _principal(self, row: BatchRow) -> Principal | None:
        principal = await self.gw.keys.get(row.key_id)
        now = time.time()
        if principal is None or principal.revoked_at is not None or (principal.expires_at or now + 1) <= now:
            return None
        return principal

    async def _fail(self, row: BatchRow, errors: list[dict[str, object]]) -> None:
        await self.store.move(row.id, self.owner, "failed", errors=_json(errors))
        log.info("batch %s failed validation: %d error(s) key=%s", row.id, len(errors), row.key_id)

    async def _end(self, batch_id: str) -> None:
        """Every line is done or will not run: close what is pending, write the results, end."""
        row = await self.store.load(batch_id)
        if row is None or row.status not in ("in_progress", "finalizing", "cancelling"):
            return
        if row.status == "cancelling":
            state, status = "canceled", "cancelled"
        elif time.time() >= row.expires_at and row.processing:
            state, status = "expired", "expired"
        elif row.processing:
            return  # lines remain (a stop that was not a cancel nor an expiry): resumed later
        else:
            state, status = "", "completed"
        if state and not await self.store.close_pending(batch_id, self.owner, state):
            return
        finalizing = status == "completed" and row.status == "in_progress"
        if finalizing and not await self.store.move(batch_id, self.owner, "finalizing"):
            return
        row = await self.store.load(batch_id) or row
        values = await self.kinds[row.api].finalize(row)
        if await self.store.move(batch_id, self.owner, status, **values):
            log.info(
                "batch %s %s: %d succeeded, %d errored, %d canceled, %d expired key=%s",
                batch_id, status, row.succeeded, row.errored, row.canceled, row.expired, row.key_id,
            )  # fmt: skip

    async def _lines(self, run: _Run, principal: Principal) -> None:
        row = run.row
        gate = asyncio.Semaphore(self.config.concurrency)
        pacer = Pacer(principal, self.config.max_share, self._model_limits)
        flying: set[asyncio.Task[None]] = set()
        after = -1
        try:
            while not run.stop.is_set():
                chunk = await self.store.pending(row.id, after, _CHUNK)
                if not chunk:
                    break
                for line in chunk:
                    await gate.acquire()
                    if run.stop.is_set():
                        gate.release()
                        break
                    await pacer.wait(line.body)
                    if run.stop.is_set():
                        gate.release()
                        break
                    task = asyncio.create_task(self._line(run, principal, pacer, line))
                    flying.add(task)
                    task.add_done_callback(lambda t: _done(flying, gate, t))
                after = chunk[-1].idx
            if flying:
                await asyncio.gather(*flying)
            await self._flush(run)
        finally:
            for task in flying:
                task.cancel()

    def _model_limits(self, model: str) -> tuple[int | None, int | None]:
        """A model's own rpm and tpm (across all keys), which a batch takes only a share of."""
        entry = self.gw.catalog.resolve(model)
        return (entry.rpm, entry.tpm) if entry is not None else (None, None)

    async def _line(self, run: _Run, principal: Principal, pacer: Pacer, line: PendingLine) -> None:
        row = run.row
        attempt = 1
        while True:
            answer = await self.caller.call(principal, row.id, row.endpoint, line.body)
            if answer.limited:
                # The key's own limit, shared with its direct calls: the line waits its turn as
                # long as it takes, without spending an attempt.
                wait = max(answer.retry_after or 0.0, self.config.retry_seconds)
                pacer.back_off(wait)
                if await _stopped(run, wait):
                    return
                continue
            if answer.retry_after is None or attempt >= self.config.max_attempts or run.stop.is_set():
                break
            wait = min(_MAX_BACKOFF, max(answer.retry_after, self.config.retry_seconds * 2 ** (attempt - 1)))
            if answer.status == 429:
                pacer.back_off(wait)
            log.info(
                "batch %s line %d: %d, attempt %d of %d, retrying in %.1f s",
                row.id, line.idx, answer.status, attempt, self.config.max_attempts, wait,
            )  # fmt: skip
            attempt += 1
            if await _stopped(run, wait):
                return  # the line stays pending (canceled, expired or resumed elsewhere)
        state = "succeeded" if answer.status < 400 else "errored"
        run.results.append(LineResult(line.idx, state, answer.status, answer.request_id, answer.body))
        if len(run.results) >= FLUSH_LINES or time.monotonic() - run.flushed >= FLUSH_SECONDS:
            await self._flush(run)

    async def _flush(self, run: _Run) -> None:
        async with run.lock:
            results, run.results = run.results, []
            run.flushed = time.monotonic()
            if not results or run.lost:
                return
            # Shielded: a shutdown cancelling the run must not tear a commit in half.
            written = await asyncio.shield(self.store.commit(run.row.id, self.owner, results))
            if written is None:
                run.lost = True
                run.stop.set()


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


def _done(flying: set[asyncio.Task[None]], gate: asyncio.Semaphore, task: asyncio.Task[None]) -> None:
    flying.discard(task)
    gate.release()


async def _stopped(run: _Run, wait: float) -> bool:
    """Wait `wait` seconds, or less if the run is stopped meanwhile; whether it was."""
    try:
        await asyncio.wait_for(run.stop.wait(), wait)
    except TimeoutError:
        return False
    return True
