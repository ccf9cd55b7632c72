"""The task state machine shared by every asynchronous family.

Task statuses: NOT_START, SUBMITTED, QUEUED, IN_PROGRESS, SUCCESS, FAILURE. An upstream
state the gateway does not recognise (UNKNOWN) never moves a task, and a terminal task never
moves again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SUBMITTED = "SUBMITTED"
QUEUED = "QUEUED"
IN_PROGRESS = "IN_PROGRESS"
SUCCESS = "SUCCESS"
FAILURE = "FAILURE"
UNKNOWN = "UNKNOWN"
TERMINAL = frozenset({SUCCESS, FAILURE})
STATUS_ORDER = {"NOT_START": 0, SUBMITTED: 1, QUEUED: 2, IN_PROGRESS: 3, SUCCESS: 4, FAILURE: 4}

# Suno-style clip statuses and the task status each implies.
CLIP_TO_TASK = {
    "submitted": SUBMITTED,
    "queued": QUEUED,
    "streaming": IN_PROGRESS,
    "complete": SUCCESS,
    "error": FAILURE,
}


def combine_clip_statuses(statuses: list[str]) -> str:
    """One task status from its clips: any error fails the task, all complete succeeds it,
    otherwise the most advanced running state; unknown clip states give UNKNOWN."""
    mapped = [CLIP_TO_TASK.get(s) for s in statuses]
    if not mapped or any(m is None for m in mapped):
        return UNKNOWN
    if FAILURE in mapped:
        return FAILURE
    if all(m == SUCCESS for m in mapped):
        return SUCCESS
    if IN_PROGRESS in mapped or SUCCESS in mapped:
        return IN_PROGRESS
    if QUEUED in mapped:
        return QUEUED
    return SUBMITTED


def may_move(current: str, new: str) -> bool:
    """Transitions only go forward; terminal states are final; UNKNOWN is ignored."""
    if current in TERMINAL or new == UNKNOWN or new not in STATUS_ORDER:
        return False
    return STATUS_ORDER[new] >= STATUS_ORDER.get(current, 0)


@dataclass(slots=True)
class Task:
    """A task row. `request` holds the validated submit fields, `result` what the upstream
    reported (clips, lyrics), both as plain JSON-able data."""

    id: str
    key_id: str
    family: str
    action: str
    model: str
    provider: str
    upstream_id: str
    status: str
    progress: int
    fail_reason: str
    submit_time: int
    start_time: int
    finish_time: int
    notify_hook: str
    request: dict[str, Any]
    result: dict[str, Any]
    public_base: str
    price: float
    version: int = 0
    poll_attempts: int = 0
    next_poll_at: float = 0.0
    deadline_at: float = 0.0
    created_at: float = 0.0
    updated_at: float = 0.0
    clip_ids: list[str] = field(default_factory=list)
    external_id: str = ""  # the client's own id for the task, where its family has one

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL
