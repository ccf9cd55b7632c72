"""What the client's parts need of each other, as small protocols, so each module imports
only the ones below it: a response pauses and drops its connection (`Reading`), a
connection reports to its pool (`ConnectionOwner`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, TypeVar

C = TypeVar("C", contravariant=True)


class StreamedBody(Protocol):
    """A request body too big to hold in memory (uploaded files), written chunk by chunk.
    `chunks()` starts over on each call, so a request on a stale connection can be retried."""

    length: int

    def chunks(self) -> Iterator[bytes]: ...


class Reading(Protocol):
    """The connection as its response sees it: flow control, and dropping it."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def abort(self) -> None: ...


class ConnectionOwner(Protocol[C]):
    """The pool as its connections see it."""

    def opened(self, conn: C) -> None: ...

    def lost(self, conn: C) -> None: ...

    def release(self, conn: C) -> None: ...
