"""Upstream HTTP: one connection pool per provider (transport/pool.py), and the mapping of
transport failures to the adapter contract while nothing has reached the client, written once:
`RouteFailed`. Bodies relayed as they arrive are `body_stream.py`'s (`StreamBroken` after the
first byte): async generators, which a compiled module cannot hold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, NoReturn

import orjson

from unigate.config import ProviderConfig
from unigate.errors import GatewayOverloaded
from unigate.providers.base import RouteFailed, Timeouts
from unigate.providers.form_body import FormBody
from unigate.providers.redact import Redactor, request_secrets
from unigate.providers.upstream_status import Reader, json_body, upstream_error
from unigate.transport.dial import Dialer, proxy_for, tls_context
from unigate.transport.errors import (
    ConnectFailed,
    LocalExhausted,
    PoolExhausted,
    UpstreamError,
    UpstreamTimeout,
)
from unigate.transport.interfaces import StreamedBody
from unigate.transport.pool import MAX_CONNECTIONS, Origin, Pool
from unigate.transport.response import Headers, Response


class UpstreamHTTP:
    def __init__(
        self, base_url: str, headers: Mapping[str, str], provider: ProviderConfig | None = None
    ) -> None:
        """`provider`'s egress settings (proxy, TLS, connection limit, keep-alive) apply;
        without one (file downloads from other hosts), the environment's proxy and defaults."""
        self.base_url = base_url
        origin = Origin.parse(base_url)
        self._base_path = origin.base_path
        proxy = proxy_for(origin.scheme, origin.host, provider.proxy if provider else None)
        tls = None
        if provider is not None and (provider.ca_file or provider.client_cert):
            tls = tls_context(provider.ca_file, provider.client_cert, provider.client_key)
        # Error answers are scrubbed of the provider's secrets (redact.py); other pools (file
        # downloads from storage hosts) send no credentials, so have none to scrub.
        self._redactor = Redactor.for_provider(provider) if provider is not None else None
        # `identity`: bodies are relayed byte for byte, never re-encoded.
        self._pool = Pool(
            base_url,
            {"Accept-Encoding": "identity", "User-Agent": "unigate/1.0", **headers},
            provider.keepalive if provider else 15.0,
            dialer=Dialer(tls, proxy),
            max_connections=provider.max_connections if provider else MAX_CONNECTIONS,
        )

    async def start(self) -> None:
        return None  # connections open on first use

    def in_use(self) -> int:
        """Exchanges under way on this pool (see `Pool.in_use`)."""
        return self._pool.in_use()

    async def aclose(self) -> None:
        await self._pool.aclose()

    def post(
        self,
        path: str,
        data: bytes | StreamedBody,
        timeouts: Timeouts,
        headers: Mapping[str, str] | None = None,
        replay: bool = False,
    ) -> Awaitable[Response]:
        """Send a request and return the response with its headers read; body unread. A form
        body brings its own Content-Type (the pool's default, JSON, is any other body's).
        `replay=True` lets a request that met a stale keep-alive connection be sent again: for
        calls whose repeat is harmless (text generation), never for task submits or paid media.
        (Not a coroutine itself: one frame less for the request's task to resume through.)"""
        return self.request("POST", path, data, timeouts, headers, replay)

    async def get(
        self,
        path: str,
        timeouts: Timeouts,
        headers: Mapping[str, str] | None = None,
        redirects: bool = False,
    ) -> Response:
        """`redirects=True` hands a 3xx back to the caller (file downloads follow them)."""
        return await self.request("GET", path, b"", timeouts, headers, redirects=redirects)

    async def delete(
        self, path: str, timeouts: Timeouts, headers: Mapping[str, str] | None = None
    ) -> Response:
        return await self.request("DELETE", path, b"", timeouts, headers)

    async def request(
        self,
        method: str,
        path: str,
        data: bytes | StreamedBody,
        timeouts: Timeouts,
        headers: Mapping[str, str] | None = None,
        replay: bool | None = None,
        redirects: bool = False,
    ) -> Response:
        """The response with its head read. A redirect is an upstream failure unless the caller
        follows redirects itself: an API answering 3xx is misconfigured (a base_url missing a
        path or on http instead of https), and its body is no answer to relay."""
        if isinstance(data, FormBody):
            headers = {**(headers or {}), "Content-Type": data.content_type}
        try:
            resp = await self._pool.request(
                method,
                path,
                data,
                connect=timeouts.connect,
                read=timeouts.read,
                total=timeouts.total,
                headers=headers,
                replay=replay,
            )
        except UpstreamTimeout:
            raise RouteFailed("The upstream did not answer in time.", status=504, cause="timeout") from None
        except (LocalExhausted, PoolExhausted) as exc:
            raise GatewayOverloaded(f"The gateway is overloaded: {exc}.") from None
        except UpstreamError as exc:
            cause = exc.stage if isinstance(exc, ConnectFailed) else "connect"
            raise RouteFailed(f"Could not reach the upstream: {exc}.", cause=cause) from None
        resp.path = self._base_path + path.partition("?")[0]
        if 300 <= resp.status < 400 and not redirects:
            resp.release()
            raise upstream_error(
                resp.status, detail="a redirect, not followed: check the provider's base_url", path=resp.path
            )
        if resp.status >= 400 and self._redactor is not None:
            await self._scrub(resp, headers)
        return resp

    async def _scrub(self, resp: Response, headers: Mapping[str, str] | None) -> None:
        """An error answer, read whole and scrubbed of the provider's secrets (and of this
        request's own credential headers) before any adapter sees it: whatever it relays or
        logs of it is clean (redact.py)."""
        assert self._redactor is not None
        extra = request_secrets(headers)
        redactor = self._redactor.plus(extra) if extra else self._redactor
        try:
            body = await read_all(resp, "error response")
        except BaseException:
            resp.release()
            raise
        raw = [(k.encode("latin-1"), v.encode("latin-1", "replace")) for k, v in resp.headers.items()]
        scrubbed = [(k, redactor.data(v)) for k, v in raw]
        resp.hold(redactor.data(body), Headers(scrubbed))


async def read_all(resp: Response, what: str = "response") -> bytes:
    """The whole upstream body; errors mapped while nothing has reached the client yet."""
    try:
        return await resp.read()
    except UpstreamTimeout:
        raise RouteFailed(f"The upstream {what} timed out.", status=504) from None
    except UpstreamError as exc:
        raise RouteFailed(f"The upstream {what} failed: {exc}.") from None


async def read_json(resp: Response) -> tuple[bytes, Any]:
    """The whole upstream body (the response released) and its JSON value: None when the body
    is empty or not JSON, for the caller to judge."""
    try:
        raw = await read_all(resp)
    finally:
        resp.release()
    try:
        return raw, orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        return raw, None


async def raise_for_answer(
    resp: Response, read: Reader, vendor: str = "", clients_404: bool = False
) -> NoReturn:
    """A failed answer, read whole and raised as the status table maps it (upstream_status.py):
    `read` is the vendor's reading of its error body; `clients_404`: a 404 is about what the
    client named (an object by id)."""
    try:
        data = await read_all(resp, "error response")
    finally:
        resp.release()
    raise upstream_error(
        resp.status,
        read(data),
        vendor=vendor,
        retry_after=resp.headers.get("Retry-After"),
        path=resp.path,
        not_json=bool(data.strip()) and json_body(data) is None,
        clients_404=clients_404,
    )
