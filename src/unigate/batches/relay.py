"""A batch relayed whole to a vendor's own batch API (`Provider.native_batches()`): chosen when
every line's model routes first to one provider that has one and speaks the lines' format, and
the key has no budget (a vendor's batch cannot be stopped line by line when money runs out, so
a budgeted key's batches always run here, each line admitted like a direct call).

The run first records with the batch that a submit to the provider is under way (`upstream` =
"provider/", `submitting_at`), submits the lines (their models mapped to the upstream's ids)
with the gateway's batch id in the upstream batch's metadata, stores the upstream id, then polls
on the task poller's cadence while it holds the batch's lease; a cancel is passed on. Once the
upstream batch is over, its results are committed as the batch's lines (the same exactly-once
commit as gateway-run lines) and each one accounted like the direct call, priced with the
vendor's discount.

A process that dies (or a submit left unanswered) after the vendor created the batch but before
its id was stored: whoever takes the batch up finds the record of the submit and asks the
vendor first (`NativeBatches.find`, by that metadata). OpenAI and Azure keep the metadata, so
the batch found is adopted and followed, and it runs and is billed once; a lookup that fails
stops the run until the next take-over rather than risk a second submit. Anthropic's batches
keep no metadata: nothing is found and the batch is submitted again (at least once). A worker
that stalls past its lease in the middle of a submit can still race the worker that took over
(both may submit); its lost lease is logged with the upstream id it created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from unigate.batches.native import NativeBatches, NativeLine, NativeResult
from unigate.batches.store import BatchRow, BatchStore, LineResult, PendingLine
from unigate.errors import GatewayError
from unigate.gateway import Gateway
from unigate.providers.base import Provider
from unigate.routing.catalog import ModelEntry

log = logging.getLogger("unigate.batches")

# The format each upstream protocol's batch API takes, by the batch's endpoint.
_FORMATS = {"openai": "openai", "azure": "openai", "anthropic": "anthropic"}
_KINDS = {"succeeded", "errored", "canceled", "expired"}
_CHUNK = 200


@dataclass(frozen=True, slots=True)
class Plan:
    provider: Provider
    native: NativeBatches
    entries: dict[str, ModelEntry]  # by the model id the lines name


def plan(gw: Gateway, row: BatchRow, lines: Sequence[PendingLine], budgeted: bool) -> Plan | None:
    """The provider to relay the whole batch to, or None (the gateway runs its lines)."""
    models = {str(line.body.get("model", "")) for line in lines}
    if budgeted or not models:
        return None
    entries: dict[str, ModelEntry] = {}
    chosen: Provider | None = None
    for model in models:
        entry = gw.catalog.resolve(model)
        if entry is None or not entry.routes:
            return None
        provider = entry.routes[0].provider
        if chosen is not None and provider is not chosen:
            return None
        chosen = provider
        entries[model] = entry
    assert chosen is not None
    if _FORMATS.get(chosen.protocol) != row.api:
        return None
    native = chosen.native_batches()
    return None if native is None else Plan(chosen, native, entries)


class Relay:
    def __init__(self, gw: Gateway, store: BatchStore) -> None:
        self.gw = gw
        self.store = store

    async def submit(
        self, row: BatchRow, owner: str, chosen: Plan, pending: Sequence[PendingLine]
    ) -> str | None:
        """Send every line upstream; the upstream id, stored with the batch (None: the lease
        was lost meanwhile)."""
        lines = []
        for line in pending:
            model = str(line.body.get("model", ""))
            upstream = chosen.entries[model].routes[0].upstream_model or model
            lines.append(NativeLine(line.custom_id, {**line.body, "model": upstream}))
        name = chosen.provider.name
        # Recorded first: a take-over after the vendor created the batch looks it up (`adopt`).
        if not await self.store.move(
            row.id, owner, row.status, upstream=f"{name}/", submitting_at=time.time()
        ):
            return None
        try:
            upstream_id = await chosen.native.submit(row.endpoint, lines, metadata(row))
        except GatewayError:
            # Refused outright (an answer, or an unsupported endpoint): no upstream batch exists,
            # and the gateway runs the lines. Anything else (no answer) leaves the record, so the
            # next run looks the batch up before submitting again.
            await self.store.move(row.id, owner, row.status, upstream="", submitting_at=None)
            raise
        kept = f"{name}/{upstream_id}"
        if not await self.store.move(row.id, owner, row.status, upstream=kept):
            log.warning(
                "batch %s: lease lost while submitting it to %s; the upstream batch %s is left to the "
                "worker that holds the batch now", row.id, name, upstream_id,
            )  # fmt: skip
            return None
        log.info("batch %s relayed to %s as %s (%d lines)", row.id, name, upstream_id, len(lines))
        return kept

    async def adopt(self, row: BatchRow, owner: str) -> str | None:
        """A batch whose submit began (`upstream` = "provider/") but whose upstream id was never
        stored: the vendor's batch found by its metadata, stored and returned as "provider/id";
        "" when there is none (the record is cleared: the batch is planned afresh); None when the
        lease was lost. A failed lookup raises: nothing is submitted while it is unknown."""
        name = row.upstream.partition("/")[0]
        provider = self.gw.providers.get(name)
        native = provider.native_batches() if provider is not None else None
        found = None
        if native is None:
            log.warning(
                "batch %s: a submit to %s was under way when its worker stopped, and that provider no "
                "longer relays batches; it cannot be looked up, so the batch is planned afresh", row.id, name,
            )  # fmt: skip
        else:
            found = await native.find(metadata(row), row.submitting_at or 0.0)
        kept = f"{name}/{found}" if found else ""
        if not await self.store.move(
            row.id, owner, row.status, upstream=kept, submitting_at=row.submitting_at if found else None
        ):
            return None
        if found:
            log.info("batch %s: adopted %s's batch %s, submitted before a take-over", row.id, name, found)
        else:
            log.info("batch %s: %s has no batch of an earlier submit; it is planned afresh", row.id, name)
        return kept

    async def follow(
        self, row: BatchRow, owner: str, upstream: str, stop: asyncio.Event, cancelling: Any
    ) -> bool:
        """Poll the upstream batch until it is over, passing a cancel on; then commit its
        results. False: the lease was lost."""
        name, _, upstream_id = upstream.partition("/")
        provider = self.gw.providers.get(name)
        native = provider.native_batches() if provider is not None else None
        if provider is None or native is None:
            log.error("batch %s: provider %s no longer relays batches; its lines are errored", row.id, name)
            return await self.store.close_pending(row.id, owner, "errored")
        cancelled = False
        delay = self.gw.config.tasks.poll_interval
        while True:
            if not cancelled and cancelling():
                await native.cancel(upstream_id)
                cancelled = True
            try:
                state = await native.poll(upstream_id)
            except GatewayError as err:  # the vendor away for a while: polled again later
                log.warning("batch %s: polling %s failed: %s (%s)", row.id, upstream, err.message, err.status)
            else:
                if state.status != "running":
                    break
            if stop.is_set():  # a cancel (passed on above): wait for the upstream to end it
                await asyncio.sleep(delay)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
            if stop.is_set() and not cancelling():
                return False  # lease lost or shutting down: the next holder polls on
            delay = min(delay * 1.5, self.gw.config.tasks.max_poll_interval)
        return await self._results(row, owner, native, upstream_id, provider)

    async def _results(
        self, row: BatchRow, owner: str, native: NativeBatches, upstream_id: str, provider: Provider
    ) -> bool:
        index = {line.custom_id: line for line in await self.store.pending(row.id, -1, row.total + 1)}
        out: list[LineResult] = []
        async for res in native.results(upstream_id):
            line = index.pop(res.custom_id, None)
            if line is None:
                continue  # not pending (written already) or not this batch's
            kind = res.kind if res.kind in _KINDS else "errored"
            body = _body(row.api, res.body, res.error) if kind in ("succeeded", "errored") else b""
            rid = f"batch_req_{row.id[-12:]}_{line.idx}"
            out.append(LineResult(line.idx, kind, int(res.status_code), rid, body))
            if kind in ("succeeded", "errored"):
                self._account(row, line.body, res, provider, native.discount)
            if len(out) >= _CHUNK:
                if await self.store.commit(row.id, owner, out) is None:
                    return False
                out = []
        if out and await self.store.commit(row.id, owner, out) is None:
            return False
        if index:  # lines the upstream reported nothing for
            return await self.store.close_pending(row.id, owner, "errored")
        return True

    def _account(
        self, row: BatchRow, body: dict[str, Any], res: NativeResult, provider: Provider, discount: float
    ) -> None:
        model = str(body.get("model", ""))
        entry = self.gw.catalog.resolve(model)
        usage = res.usage or {}
        prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        ok = res.kind == "succeeded"
        cost = 0.0
        if entry is not None and ok:
            cost = entry.prices.cost(prompt, completion) * (1.0 - discount)
        upstream = entry.routes[0].upstream_model if entry is not None and entry.routes else None
        self.gw.usage.record(
            key_id=row.key_id, endpoint=_OPS.get(row.endpoint, row.endpoint), model=model,
            provider=provider.name, upstream_model=upstream or model, status=int(res.status_code) or 500,
            prompt_tokens=prompt, completion_tokens=completion, latency_ms=0.0, cost=cost,
            created_at=time.time(), batch=row.id,
        )  # fmt: skip


def metadata(row: BatchRow) -> dict[str, str]:
    """What the upstream batch carries to be found by after a take-over: the gateway's batch id."""
    return {"unigate_batch_id": row.id}


_OPS = {
    "/v1/chat/completions": "chat", "/v1/completions": "completions", "/v1/embeddings": "embeddings",
    "/v1/moderations": "moderations", "/v1/responses": "chat", "/v1/messages": "chat",
}  # fmt: skip


def _body(api: str, body: dict[str, Any] | None, error: dict[str, Any] | None) -> bytes:
    if body is not None:
        return orjson.dumps(body)
    error = error or {"message": "The upstream batch reported no result."}
    if api == "anthropic":
        return orjson.dumps({"type": "error", "error": {"type": error.get("type", "api_error"), **error}})
    return orjson.dumps({"error": {"type": "upstream_error", "code": error.get("code"), **error}})
