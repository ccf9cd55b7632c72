"""One error tree for the whole gateway, rendered once at the edge in each family's shape
(the error styles: `edge/error_styles.py`).

    GatewayError                       status  OpenAI error.type
    ├── InvalidRequest                 400     invalid_request_error
    ├── AuthenticationFailed           401     authentication_error
    ├── PermissionDenied               403     permission_error
    ├── NotFound                       404     not_found_error / invalid_request_error
    ├── Conflict                       409     invalid_request_error
    ├── PayloadTooLarge                413     invalid_request_error
    ├── RateLimited                    429     rate_limit_error
    ├── BudgetExceeded                 429     insufficient_quota (402 on music paths)
    ├── StorageQuotaExceeded           429/413 insufficient_quota (the key's stored bytes)
    ├── UpstreamRejected               4xx     (the upstream's own status, relayed)
    ├── UpstreamFailed                 502/503/504 upstream_error / timeout
    └── StorageUnavailable             503     server_error (the file store is unreachable)

Messages never contain key material: callers pass fixed strings, and what comes from an
upstream (`UpstreamRejected`'s message and raw body) has been scrubbed of that provider's
credentials before it gets here (providers/redact.py, applied in transport and routing).
"""

from __future__ import annotations


class GatewayError(Exception):
    status: int = 500
    type: str = "api_error"
    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.param = param
        self.headers = headers or {}


class InvalidRequest(GatewayError):
    status, type, code = 400, "invalid_request_error", "invalid_request"


class AuthenticationFailed(GatewayError):
    status, type, code = 401, "authentication_error", "invalid_api_key"


class PermissionDenied(GatewayError):
    status, type, code = 403, "permission_error", "permission_denied"


class NotFound(GatewayError):
    status, type, code = 404, "invalid_request_error", "not_found"


class PayloadTooLarge(GatewayError):
    status, type, code = 413, "invalid_request_error", "request_too_large"


class Conflict(GatewayError):
    """The request conflicts with an earlier one (an Idempotency-Key reused for another body,
    or still in flight)."""

    status, type, code = 409, "invalid_request_error", "conflict"


class RateLimited(GatewayError):
    status, type, code = 429, "rate_limit_error", "rate_limit_exceeded"


class BudgetExceeded(GatewayError):
    """The key's money budget for its period does not cover the call: waiting does not help
    (until the period ends or the budget is raised), so no Retry-After. The music family's
    clients expect 402 for it, as its relays answer (its error style says so)."""

    status, type, code = 429, "insufficient_quota", "insufficient_quota"


class StorageQuotaExceeded(GatewayError):
    """The key holds as much stored state as it may (stored responses): delete some, or wait
    for retention. 413 when one request alone would store more than the whole quota."""

    status, type, code = 429, "insufficient_quota", "storage_quota_exceeded"


class UpstreamRejected(GatewayError):
    """The upstream answered 4xx for the client's request; relayed with its status."""

    type, code = "invalid_request_error", "upstream_rejected"

    def __init__(
        self, status: int, message: str, raw_openai_body: bytes | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, status=status, code=code)
        self.raw_openai_body = raw_openai_body


class UpstreamFailed(GatewayError):
    status, type, code = 502, "upstream_error", "upstream_unavailable"


class DatabaseUnavailable(GatewayError):
    """The database cannot be reached (down or restarting): retry shortly. Nothing was stored,
    so nothing is charged."""

    status, type, code = 503, "server_error", "database_unavailable"

    def __init__(self) -> None:
        super().__init__(
            "The gateway's database is unavailable; nothing was stored. Retry shortly.",
            headers={"retry-after": "2"},
        )


class StorageUnavailable(GatewayError):
    """The file store (the data dir's disk, or the S3-compatible bucket) failed: retry shortly.
    `detail` is for the log line only (the store's own reason, never credentials); the client
    gets a fixed message."""

    status, type, code = 503, "server_error", "storage_unavailable"

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            "The gateway's file storage is unavailable. Retry shortly.", headers={"retry-after": "2"}
        )
        self.detail = detail


class GatewayOverloaded(GatewayError):
    """The gateway's own limits or resources (connections, file descriptors) ran out: not
    the upstream's fault, so no route is failed over or cooled down for it."""

    status, type, code = 503, "server_error", "gateway_overloaded"
