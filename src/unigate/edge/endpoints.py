"""Endpoints: (method, path) and its handler, with the family, error shape and auth kind that
the edge needs before the handler runs. `endpoint_table.py` routes requests to them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, cast, overload

from unigate.auth.principal import Principal
from unigate.edge.asgi import Request

# A handler for API keys gets the key's Principal; the others (admin key, metrics token, no
# credentials) get the request alone.
KeyHandler = Callable[[Request, Principal], Awaitable[None]]
OpenHandler = Callable[[Request], Awaitable[None]]
Handler = KeyHandler | OpenHandler
# "metrics": the admin key or the metrics token (a scraper need not hold the admin key).
AuthKind = Literal["key", "admin", "metrics", "none"]
OpenAuth = Literal["admin", "metrics", "none"]
StyleOf = Callable[[Request], str]
ANY_SEGMENT = "[^/]+"


@dataclass(frozen=True, slots=True, init=False)
class Endpoint:
    """One (method, path) and what the edge needs before its handler runs. The constructor
    pairs the auth kind with the handler's kind: an API-key endpoint (the default) takes a
    `KeyHandler`, the others an `OpenHandler`, so the edge can hand a key endpoint's handler
    the request's `Principal`, never None."""

    method: str
    path: str
    handler: Handler
    family: str  # the permission family; "" for admin/health
    style: str  # its error shape: a name in `edge/error_styles.py`'s STYLES
    auth: AuthKind
    param: str  # what a `{param}` of the path matches
    # The call's family depends on what its body asks for (api/serving/output_family.py): the handler
    # checks it once the body is parsed, so the edge does not refuse it for `family` alone.
    family_by_output: bool
    # A path several client formats share: the error style of each request, by what its client
    # sends (read only when an error is rendered); `style` is the documented default.
    style_of: StyleOf | None
    # `handler` by kind, for the edge to call without a check per request: the other one is a
    # stub that raises (the constructor's overloads pair each auth kind with its handler kind).
    key_handler: KeyHandler
    open_handler: OpenHandler
    # The metrics' family label: `family`, or for endpoints outside the model families their
    # auth kind's (made once here rather than per request).
    label: str

    @overload
    def __init__(
        self,
        method: str,
        path: str,
        handler: KeyHandler,
        *,
        family: str = "",
        style: str = "openai",
        auth: Literal["key"] = "key",
        param: str = ANY_SEGMENT,
        family_by_output: bool = False,
        style_of: StyleOf | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        method: str,
        path: str,
        handler: OpenHandler,
        *,
        auth: OpenAuth,
        style: str = "openai",
        param: str = ANY_SEGMENT,
    ) -> None: ...

    def __init__(
        self,
        method: str,
        path: str,
        handler: Handler,
        *,
        family: str = "",
        style: str = "openai",
        auth: AuthKind = "key",
        param: str = ANY_SEGMENT,
        family_by_output: bool = False,
        style_of: StyleOf | None = None,
    ) -> None:
        key: KeyHandler = _not_key
        plain: OpenHandler = _not_open
        if auth == "key":
            key = cast(KeyHandler, handler)
        else:
            plain = cast(OpenHandler, handler)
        label = family or _NO_FAMILY[auth]
        values = (
            method,
            path,
            handler,
            family,
            style,
            auth,
            param,
            family_by_output,
            style_of,
            key,
            plain,
            label,
        )
        for name, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)


_FIELDS = (
    "method",
    "path",
    "handler",
    "family",
    "style",
    "auth",
    "param",
    "family_by_output",
    "style_of",
    "key_handler",
    "open_handler",
    "label",
)
# The metrics' family label of endpoints outside the model families, by auth kind.
_NO_FAMILY = {"key": "api", "admin": "admin", "metrics": "metrics", "none": "public"}


async def _not_key(request: Request, principal: Principal) -> None:
    raise TypeError("an endpoint without API keys was handed a key's principal")


async def _not_open(request: Request) -> None:
    raise TypeError("an API-key endpoint was called without a principal")
