"""The poller: leases due tasks, polls each provider once per batch, and moves tasks forward.

- Leases keep several workers or replicas from polling one task at once; a lease that is not
  released (crash) expires and the task is polled again.
- Each task backs off while nothing changes and is polled promptly again after a change.
- Past its deadline a task fails with a clear reason (and is refunded); an upstream state the
  gateway does not know never ends a task.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import defaultdict
from typing import Any

from unigate.background import Periodic
from unigate.config import TasksConfig
from unigate.providers.base import Provider, TaskRef, UpstreamTask
from unigate.store.db import is_outage
from unigate.tasks.model import (
    CLIP_TO_TASK,
    FAILURE,
    IN_PROGRESS,
    QUEUED,
    STATUS_ORDER,
    TERMINAL,
    Task,
    may_move,
)
from unigate.tasks.service import TaskService

log = logging.getLogger("unigate.tasks")

_MAX_IDLE_DELAY = 1.0


class Poller:
    def __init__(
        self, service: TaskService, providers: dict[str, Provider], config: TasksConfig, batch: int = 200
    ) -> None:
        self.service = service
        self.store = service.store
        self.use(providers)
        self.config = config
        self.batch = batch
        self.owner = f"{os.getpid()}-{os.urandom(4).hex()}"
        self._loop = Periodic("task-poller", self._step, 0.25)
        self._idle_delay = 0.25
        # A database outage interrupted a round: leases taken or held here may not have been
        # given back, and would keep their tasks waiting until they lapse (tasks.lease_seconds).
        self._stranded = False
        self.polls = 0  # upstream poll calls made (observability, tests)

    def use(self, providers: dict[str, Provider]) -> None:
        """The providers to poll (again on a config reload). A task created after this may
        come from a newer config (a worker or replica that reloaded first): its provider
        missing here does not fail it."""
        self.providers = providers
        self.providers_since = time.time()

    async def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()
        try:
            await self.store.release_leases(self.owner)
        except Exception:  # the leases then simply expire
            log.exception("releasing poll leases failed")

    async def _step(self) -> float:
        worked = await self.tick()
        # Idle: back off to 1 s, or poll_interval when shorter (tasks are due at that granularity
        # anyway); busy: go on.
        idle_cap = min(_MAX_IDLE_DELAY, self.config.poll_interval)
        self._idle_delay = min(0.25, idle_cap) if worked else min(self._idle_delay * 2, idle_cap)
        return 0.05 if worked >= self.batch else self._idle_delay

    async def tick(self) -> int:
        if self._stranded:
            # Between ticks this poller holds only leases it could not give back: release them
            # as soon as the database answers again, so those tasks are polled at once (by any
            # poller) instead of a lease's length after the outage began.
            await self.store.release_leases(self.owner)
            self._stranded = False
        try:
            leased = await self.store.lease_due(self.owner, self.batch, self.config.lease_seconds)
        except Exception as exc:
            # The connection can die after the server committed the claim: the leases may be ours.
            self._stranded = is_outage(exc)
            raise
        if not leased:
            return 0
        by_provider: dict[str, list[Task]] = defaultdict(list)
        for task in leased:
            by_provider[task.provider].append(task)
        await asyncio.gather(*(self._poll_provider(name, group) for name, group in by_provider.items()))
        return len(leased)

    async def _poll_provider(self, name: str, group: list[Task]) -> None:
        provider = self.providers.get(name)
        states: dict[str, UpstreamTask] = {}
        gone: set[str] = set()
        if provider is None:
            gone = {t.id for t in group if t.created_at <= self.providers_since}
            if gone:
                log.error("tasks reference provider %s, which is no longer configured", name)
        else:
            try:
                self.polls += 1
                refs = [TaskRef(t.upstream_id, t.action) for t in group]
                states = await provider.poll_tasks(refs, provider.timeouts())
            except Exception as exc:  # one provider's outage must not stop the others
                cause = provider.redactor.text(str(exc))
                log.warning("polling %d task(s) at %s failed: %s", len(group), name, cause)
            for state in states.values():
                if state.fail_reason or state.error_type:  # the upstream's words: stored, shown, logged
                    state.fail_reason = provider.redactor.text(state.fail_reason)
                    state.error_type = provider.redactor.text(state.error_type)
        for task in group:
            try:
                await self.advance(task, states.get(task.upstream_id), task.id in gone)
            except Exception as exc:
                self._stranded = self._stranded or is_outage(exc)
                log.exception("advancing task %s failed", task.id)

    async def advance(self, task: Task, state: UpstreamTask | None, provider_gone: bool = False) -> None:
        now = time.time()
        if task.status in TERMINAL:
            return
        if now >= task.deadline_at or provider_gone:
            reason = (
                f"Task timed out: not finished within {int(self.config.deadline_seconds)} seconds."
                if not provider_gone
                else "The provider that ran this task is no longer configured."
            )
            await self._fail(task, reason, "timeout" if not provider_gone else "provider_removed")
            return
        changes = _changes(task, state, now) if state is not None else None
        if not changes:
            attempts = task.poll_attempts + 1
            delay = min(self.config.poll_interval * (1.5 ** min(attempts, 20)), self.config.max_poll_interval)
            await self.store.reschedule(task, self.owner, min(now + delay, task.deadline_at), attempts)
            return
        changes["next_poll_at"] = now + self.config.poll_interval
        changes["poll_attempts"] = 0
        updated = _apply(task, changes)
        clip_map = []
        if state is not None and state.clips:
            clip_map = [
                (clip_id, str(clip["id"]))
                for clip_id, clip in zip(task.clip_ids, state.clips, strict=False)
                if clip.get("id")
            ]
        moved = await self.store.transition(task, changes, self.service.event(updated), clip_map)
        if moved and changes.get("status") == FAILURE:
            await self._failed(task, updated.fail_reason, updated.result.get("error_type", ""))

    async def _fail(self, task: Task, reason: str, error_type: str) -> None:
        now = time.time()
        result = {**task.result, "error_type": error_type, "error_message": reason}
        changes = {
            "status": FAILURE,
            "fail_reason": reason,
            "finish_time": int(now),
            "progress": 100,
            "result": result,
        }
        if await self.store.transition(task, changes, self.service.event(_apply(task, changes))):
            await self._failed(task, reason, error_type)

    async def _failed(self, task: Task, reason: str, error_type: str) -> None:
        # Only after the transition was written: a poller that lost the race to another worker
        # stays silent, so each failure is logged and refunded once.
        _log_failure(task, reason, error_type)
        await self.service.refunded(task)


def _log_failure(task: Task, reason: str, error_type: str) -> None:
    log.warning(
        "task %s (%s %s, provider %s, upstream id %s) failed [%s]: %r",
        task.id,
        task.family,
        task.action,
        task.provider,
        task.upstream_id or "-",
        error_type,
        reason,
    )


def _apply(task: Task, changes: dict[str, Any]) -> Task:
    fields = {name: getattr(task, name) for name in task.__dataclass_fields__}
    fields.update({k: v for k, v in changes.items() if k in fields})
    return Task(**fields)


def _changes(task: Task, state: UpstreamTask, now: float) -> dict[str, Any]:
    """What the upstream state changes about `task`; empty when nothing does."""
    changes: dict[str, Any] = {}
    status = task.status
    if may_move(task.status, state.status) and state.status != task.status:
        status = state.status
        changes["status"] = status
    started = state.start_time
    running = STATUS_ORDER[IN_PROGRESS]
    if started is None and STATUS_ORDER.get(task.status, 0) < running <= STATUS_ORDER.get(status, 0):
        started = int(now)  # first seen running: the real start replaces the submit time
    if started is not None and started != task.start_time:
        changes["start_time"] = started
    if status in TERMINAL:
        changes["finish_time"] = int(now)
    progress = _progress(task, status, state)
    if progress != task.progress:
        changes["progress"] = progress
    result = dict(task.result)
    if state.clips:
        result["clips"] = _known_clip_statuses(state.clips, task.result.get("clips") or [])
        durations = [float(c["duration"]) for c in state.clips if c.get("duration")]
        if durations:
            result["duration"] = max(durations)
    if state.lyrics is not None:
        result["lyrics"] = state.lyrics
    if state.outputs:
        result["outputs"] = state.outputs
    if status == FAILURE:
        reason = state.fail_reason or "The upstream reported a failure."
        changes["fail_reason"] = reason
        result["error_type"] = state.error_type or "upstream_error"
        result["error_message"] = reason
    if result != task.result:
        changes["result"] = result
    return changes


def _known_clip_statuses(clips: list[dict[str, Any]], previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Clips as reported, except that a clip status the gateway does not know keeps the
    clip's last known status (clients only ever see the documented vocabulary)."""
    out = []
    for i, clip in enumerate(clips):
        if clip.get("status") not in CLIP_TO_TASK:
            before = previous[i].get("status") if i < len(previous) else None
            clip = {**clip, "status": before if before in CLIP_TO_TASK else "submitted"}
        out.append(clip)
    return out


def _progress(task: Task, status: str, state: UpstreamTask) -> int:
    if status in TERMINAL:
        return 100
    if status == IN_PROGRESS and not state.progress:
        # Suno relays report 0% until the end; then the gateway's own estimate rises per poll.
        return min(90, max(task.progress + 10, 20))
    if state.progress is not None:
        return max(task.progress, min(99, state.progress))
    if status == QUEUED:
        return max(task.progress, 5)
    return task.progress
