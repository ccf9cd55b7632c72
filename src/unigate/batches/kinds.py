"""What differs between the batch APIs the engine runs (OpenAI's `/v1/batches`, Anthropic's
`/v1/messages/batches`): how a batch's lines are prepared before it runs and what is written
once its lines are done. The engine (`runner.py`) is the same for both."""

from __future__ import annotations

from typing import Any, Protocol

from unigate.auth.principal import Principal
from unigate.batches.store import BatchRow, NewLine


class Refused(Exception):
    """A batch's input cannot run: `errors` (OpenAI's `errors.data` items) say why."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} bad line(s)")
        self.errors = errors


class BatchKind(Protocol):
    async def prepare(self, row: BatchRow, principal: Principal) -> list[NewLine]:
        """The lines of a `validating` batch (raises `Refused`)."""
        ...

    async def finalize(self, row: BatchRow) -> dict[str, Any]:
        """Once every line is done: what the batch row gets with its end (its result files)."""
        ...
