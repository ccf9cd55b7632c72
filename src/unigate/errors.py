"""One error tree for the whole gateway, rendered once at the edge in each family's shape.

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
    ├── UpstreamFailed                 502/504 upstream_error / timeout
    └── StorageUnavailable             503     server_error (the file store is unreachable)

Messages never contain key material: callers pass fixed strings, and what comes from an
upstream (`UpstreamRejected`'s message and raw body) has been scrubbed of that provider's
credentials before it gets here (providers/redact.py, applied in transport and routing).
"""

from __future__ import annotations

from typing import Literal

import orjson

ErrorStyle = Literal[
    "openai", "music", "anthropic", "gemini", "stability", "fish", "kling", "vidu", "picwish", "plain"
]


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

    def status_for(self, style: ErrorStyle) -> int:
        """The HTTP status in a family's responses (a few families use their own)."""
        return self.status


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
    clients expect 402 for it, as its relays answer."""

    status, type, code = 429, "insufficient_quota", "insufficient_quota"

    def status_for(self, style: ErrorStyle) -> int:
        return 402 if style == "music" else self.status


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


# Anthropic and Gemini name their error kinds by status.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


# Kling's service codes by HTTP status: 1000s auth, 1100s account, 1200s parameters, 1300s
# policy and rate, 5000s server.
_KLING_CODES = {
    400: 1201,
    401: 1000,
    402: 1102,
    403: 1103,
    404: 1203,
    409: 1201,
    413: 1201,
    429: 1302,
    504: 5002,
}
_KLING_AUTH = {"missing_api_key": 1001, "revoked_api_key": 1004, "expired_api_key": 1004}
# Vidu's `reason` words (its error-code page) by HTTP status.
_VIDU_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    402: "CreditInsufficient",
    403: "Forbidden",
    404: "TaskNotFound",
    409: "Conflict",
    413: "BadRequest",
    429: "TooManyRequests",
}


def render_error(err: GatewayError, style: ErrorStyle, request_id: str = "") -> bytes:
    """The JSON body for `err` in the shape the family's clients parse."""
    if style == "openai":
        if isinstance(err, UpstreamRejected) and err.raw_openai_body is not None:
            return err.raw_openai_body
        return orjson.dumps(
            {"error": {"message": err.message, "type": err.type, "param": err.param, "code": err.code}}
        )
    if style == "music":
        return orjson.dumps({"code": err.code or "error", "message": err.message, "data": None})
    if style == "anthropic":
        kind = _ANTHROPIC_TYPES.get(err.status, "api_error")
        return orjson.dumps(
            {"type": "error", "error": {"type": kind, "message": err.message}, "request_id": request_id}
        )
    if style == "gemini":
        status = _GEMINI_STATUS.get(err.status, "INTERNAL")
        return orjson.dumps({"error": {"code": err.status, "message": err.message, "status": status}})
    if style == "fish":
        return orjson.dumps({"status": err.status, "message": err.message})
    if style == "kling":
        code = _KLING_AUTH.get(err.code or "") or _KLING_CODES.get(err.status, 5000)
        return orjson.dumps({"code": code, "message": err.message, "request_id": request_id})
    if style == "vidu":
        reason = _VIDU_REASONS.get(err.status, "InternalServiceFailure")
        return orjson.dumps({"code": err.status, "reason": reason, "message": err.message, "metadata": {}})
    if style == "picwish":
        return orjson.dumps({"status": err.status, "message": err.message})
    if style == "stability":
        return orjson.dumps({"id": request_id, "name": err.code or "error", "errors": [err.message]})
    return orjson.dumps({"message": err.message, "code": err.code})
