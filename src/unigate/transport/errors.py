"""What the upstream HTTP client raises: every transport failure is an `UpstreamError`."""

from __future__ import annotations


class UpstreamError(Exception):
    """The exchange with the upstream failed at the transport level."""


class UpstreamTimeout(UpstreamError):
    """Connect, read (silence) or total timeout."""


class ConnectionBroken(UpstreamError):
    """The connection closed or the response was malformed before the response was complete."""


class ConnectFailed(UpstreamError):
    """No connection could be opened: `stage` says where it stopped (`dns`, `connect`, `tls`
    or `proxy`), so a diagnosis (`unigate providers check`) can name the fix."""

    def __init__(self, message: str, stage: str = "connect") -> None:
        super().__init__(message)
        self.stage = stage


class LocalExhausted(UpstreamError):
    """The gateway ran out of local resources (file descriptors, ports) opening a connection."""


class PoolExhausted(UpstreamError):
    """Every allowed connection is busy and the wait queue is full: a local limit."""
