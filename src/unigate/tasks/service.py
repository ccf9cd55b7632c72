"""Submit and fetch tasks for any async family. A submit reaches the upstream first (so a
rejected submit is never charged), then its row, clips, price reservation and first webhook
event are committed together, and only then is the answer sent."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from unigate.auth.principal import Principal
from unigate.config import TasksConfig
from unigate.errors import GatewayError
from unigate.limits.service import Limits
from unigate.providers.base import SubmitResult, Target, TaskSubmission
from unigate.routing.catalog import ModelEntry
from unigate.routing.engine import Router
from unigate.tasks.group_commit import GroupCommit
from unigate.tasks.idempotency import Claim, IdempotencyStore, as_submitted, fingerprint, reused
from unigate.tasks.model import SUBMITTED, Task
from unigate.tasks.outbox_store import OutboxEvent
from unigate.tasks.store import NewTask, TaskStore, row_task
from unigate.usage.recorder import UsageRecorder
from unigate.webhooks.signing import new_message_id

if TYPE_CHECKING:
    from unigate.observability.metrics import Metrics
    from unigate.observability.tracing import Tracing

Renderer = Callable[[Task], dict[str, Any]]
_RENDER_CACHE = 2048  # records (a few KB each)


@dataclass(frozen=True, slots=True)
class TaskShape:
    """How one path family shows its tasks: the record its fetch endpoint answers, and the
    body of the webhook event its callbacks carry (built from that record)."""

    record: Renderer
    event: Callable[[dict[str, Any]], Any]


def music_envelope(record: dict[str, Any]) -> dict[str, Any]:
    return {"code": "success", "message": "", "data": record}


@dataclass(frozen=True, slots=True)
class Pinned:
    """Send a job to one given provider (e.g. the one owning a clip being continued)."""

    target: Target


@dataclass(slots=True)
class _Order:
    """One submit as `TaskService.submit` was given it, for the steps that carry it out."""

    principal: Principal
    job: TaskSubmission
    route: ModelEntry | Pinned
    price: float
    notify_hook: str
    public_base: str
    clip_count: int
    stored_fields: dict[str, Any] | None
    external_id: str
    claim: Claim | None


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        writer: GroupCommit[NewTask],
        router: Router,
        config: TasksConfig,
        shapes: dict[str, TaskShape],
        usage: UsageRecorder | None = None,
        limits: Limits | None = None,
        keys: Callable[[str], Awaitable[Principal | None]] | None = None,
        *,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.metrics = metrics  # submits, task prices and refunds
        self.tracing = tracing  # a span per submit when tracing is on
        self.usage = usage
        self.limits = limits
        self.keys = keys  # a key's record by id, for refunds to its budget
        self.store = store
        self.writer = writer
        self.router = router
        self.config = config
        self.shapes = shapes
        self.idempotency = IdempotencyStore(store.engine)
        self._rendered: dict[str, tuple[int, bytes]] = {}

    def render(self, task: Task) -> dict[str, Any]:
        return self.shapes[task.family].record(task)

    def rendered(self, task: Task) -> bytes:
        """The task's record as JSON, rendered once per task version: clients poll the same
        task many times between changes, and rendering is most of a fetch's cost."""
        cached = self._rendered.get(task.id)
        if cached is not None and cached[0] == task.version:
            return cached[1]
        # An exact-size copy: orjson's result keeps its ~32 KB working buffer allocated, which
        # made a full cache cost 32 MB instead of ~7 MB.
        data = bytes(memoryview(orjson.dumps(self.render(task))))
        if len(self._rendered) >= _RENDER_CACHE:
            self._rendered.pop(next(iter(self._rendered)))  # oldest insertion first
        self._rendered[task.id] = (task.version, data)
        return data

    def event(self, task: Task) -> list[OutboxEvent]:
        """The webhook event reporting `task`'s current state, if it has a hook."""
        if not task.notify_hook:
            return []
        payload = orjson.dumps(self.shapes[task.family].event(self.render(task)))
        return [OutboxEvent(new_message_id(), task.id, task.key_id, task.notify_hook, payload)]

    async def submit(
        self,
        principal: Principal,
        job: TaskSubmission,
        route: ModelEntry | Pinned,
        *,
        price: float,
        notify_hook: str,
        public_base: str,
        clip_count: int = 0,
        stored_fields: dict[str, Any] | None = None,
        external_id: str = "",
        idempotency_key: str | None = None,
        precheck: Callable[[], Awaitable[None]] | None = None,
        picked: tuple[str, ...] = (),
    ) -> Task:
        """Submit upstream, then commit the task; `stored_fields` is what the task record
        shows when it differs from what the upstream is sent (e.g. public vs upstream clip ids).
        The submit counts against the key's and model's requests per minute, and its price is
        reserved from the key's budget before the upstream is called (refunded if it fails).
        With an `idempotency_key`, a repeat of an earlier submit answers that submit's task
        (no upstream call, no charge); `precheck` runs only for a submit that is not a repeat;
        `picked` names fields the gateway chose itself (a random seed), not compared."""
        claim: Claim | None = None
        if idempotency_key is not None:
            pinned = route.target.provider.name if isinstance(route, Pinned) else ""
            print_ = fingerprint(
                job,
                pinned=pinned,
                notify_hook=notify_hook,
                clip_count=clip_count,
                stored_fields=stored_fields,
                external_id=external_id,
                picked=picked,
            )
            found = await self.idempotency.acquire(principal.key_id, idempotency_key, print_)
            if found.task_id is not None:
                return await self._repeat(principal, job, found.task_id)
            claim = found.claim
        order = _Order(principal, job, route, price, notify_hook, public_base, clip_count, stored_fields,
                       external_id, claim)  # fmt: skip
        try:
            if precheck is not None:
                await precheck()
            return await self._admitted(order)
        except BaseException:
            if claim is not None and not claim.queued:
                await self.idempotency.release(claim)
            raise

    async def _repeat(self, principal: Principal, job: TaskSubmission, task_id: str) -> Task:
        task = await self.store.get(task_id)
        if task is None or task.key_id != principal.key_id or task.family != job.family:
            raise reused()  # deleted meanwhile (a delete frees its keys), or not this request's
        return as_submitted(task)

    async def _admitted(self, order: _Order) -> Task:
        """The submit within the key's and model's limits: admitted before the upstream call,
        its reservation given back if the submit fails."""
        entry = order.route if isinstance(order.route, ModelEntry) else None
        ticket = None
        if self.limits is not None and Limits.applies(order.principal, entry):
            ticket = await self.limits.admit(order.principal, entry, 0, order.price)
        try:
            return await self._submit(order)
        except BaseException:
            if self.limits is not None:
                await self.limits.settle(ticket, 0, 0.0)
            raise

    async def _submit(self, order: _Order) -> Task:
        principal, job, route, price, clip_count = (
            order.principal, order.job, order.route, order.price, order.clip_count
        )  # fmt: skip

        async def invoke(target: Target) -> SubmitResult:
            upstream_job = TaskSubmission(
                job.family,
                job.action,
                target.upstream_model,
                job.fields,
                job.upload,
                job.upload_name,
                job.files,
            )
            return await target.provider.submit_task(upstream_job, target)

        started = time.perf_counter()
        try:
            if isinstance(route, Pinned):
                result, target = await self.router.run_targets([route.target], invoke)
            else:
                result, target = await self.router.run(route, job.model, invoke)
        except GatewayError as err:
            self._account(principal, job, None, err.status, 0.0, started, err.code or "error")
            raise
        self._account(principal, job, target, 200, price, started)
        now = time.time()
        task = Task(
            id=str(uuid.uuid4()),
            key_id=principal.key_id,
            family=job.family,
            action=job.action,
            model=job.model,
            provider=target.provider.name,
            upstream_id=result.upstream_id,
            status=SUBMITTED,
            progress=0,
            fail_reason="",
            submit_time=int(now),
            # Spec: "the same form as submit_time". Moved to the real start once the upstream
            # reports the job running (or says when it started).
            start_time=int(now),
            finish_time=0,
            notify_hook=order.notify_hook,
            request=job.fields if order.stored_fields is None else order.stored_fields,
            result={},
            public_base=order.public_base,
            price=price,
            next_poll_at=now + self.config.poll_interval,
            deadline_at=now + self.config.deadline_seconds,
            created_at=now,
            updated_at=now,
            clip_ids=[str(uuid.uuid4()) for _ in range(clip_count)],
            external_id=order.external_id,
        )
        upstream_clips: list[str | None] = [*result.clip_ids, *([None] * (clip_count - len(result.clip_ids)))]
        if order.claim is not None:
            order.claim.queued = True  # the commit records the key with the task, or fails with it
        clip_map = list(zip(task.clip_ids, upstream_clips, strict=False))
        await self.writer.insert(NewTask(task, clip_map, self.event(task), order.claim))
        return task

    def _account(
        self,
        principal: Principal,
        job: TaskSubmission,
        target: Target | None,
        status: int,
        cost: float,
        started: float,
        error: str | None = None,
    ) -> None:
        """A submit in the usage records, by family and action (`/admin/usage`), off the
        request path like every other call; a later refund shows in the task's ledger.
        Also in the metrics, and a span when tracing is on."""
        provider = target.provider.name if target else ""
        if self.metrics is not None:
            self.metrics.task_submitted(job.family, job.model, provider, status, cost)
        if self.tracing is not None:
            self.tracing.task_submit(
                family=job.family,
                action=job.action,
                model=job.model,
                protocol=target.provider.protocol if target else "",
                provider=provider,
                upstream_model=target.upstream_model if target else "",
                status=status,
                started=started,
                error=error,
            )
        if self.usage is None:
            return
        self.usage.record(
            key_id=principal.key_id,
            endpoint=f"{job.family}.{job.action}"[:60],
            model=job.model,
            provider=target.provider.name if target else "",
            upstream_model=target.upstream_model if target else "",
            status=status,
            prompt_tokens=0,
            completion_tokens=0,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            cost=cost,
            created_at=time.time(),
        )

    async def refunded(self, task: Task) -> None:
        """A failed paid task's price is back in its key's budget (the ledger row was written
        with the failure): in the usage records and in the live budget counter."""
        if task.price <= 0:
            return
        if self.metrics is not None:
            self.metrics.refunds.inc((task.model, task.provider), task.price)
        if self.usage is not None:
            self.usage.refund(task.key_id, f"{task.family}.{task.action}"[:60], task.model, task.provider,
                              task.price)  # fmt: skip
        if self.limits is not None and self.keys is not None:
            owner = await self.keys(task.key_id)
            if owner is not None:
                await self.limits.refund(owner, task.price, task.created_at)

    async def fetch_rendered(self, principal: Principal, task_id: str, family: str = "music") -> bytes | None:
        """The caller's task of `family` as rendered JSON, or None. A task polled again
        before it changed is answered from the render cache without decoding the row."""
        row = await self.store.get_row(task_id)
        if row is None or row.key_id != principal.key_id or row.family != family:
            return None
        cached = self._rendered.get(task_id)
        if cached is not None and cached[0] == row.version:
            return cached[1]
        return self.rendered(row_task(row))

    async def fetch(self, principal: Principal, task_id: str, family: str = "music") -> Task | None:
        """The task if it exists, belongs to the caller and was created through `family`'s
        paths (another key's id, or another family's, looks unknown)."""
        task = await self.store.get(task_id)
        if task is None or task.key_id != principal.key_id or task.family != family:
            return None
        return task

    async def fetch_many(self, principal: Principal, ids: list[str], family: str = "music") -> list[Task]:
        return [t for t in await self.store.get_many(ids, principal.key_id) if t.family == family]
