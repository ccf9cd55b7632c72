"""The ASGI application: lifespan, endpoint dispatch, authentication and the error edge.

Order per request: match endpoint -> authenticate (one code path for every header form)
-> family permission -> handler. Every `GatewayError` raised before a response starts is
rendered here, once, in the endpoint family's shape.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Awaitable
from typing import Final

import orjson

from unigate.api.admin import dashboard, metrics, provider_check
from unigate.api.admin import keys as admin_keys
from unigate.api.admin import reload as admin_reload
from unigate.api.admin import resources as admin
from unigate.api.admin import usage as admin_usage
from unigate.api.anthropic import batches as message_batches
from unigate.api.anthropic import messages
from unigate.api.gemini import content as gemini
from unigate.api.gemini import veo
from unigate.api.openai import audio, batches, files, images, responses, text, videos
from unigate.api.serving import media, task_output
from unigate.api.unigate import docs, health, home, video_generations
from unigate.api.vendors import fish, kling, picwish, stability, suno, vidu
from unigate.auth.authenticate import authenticate
from unigate.batches.service import Batches
from unigate.config_source import LoadedConfig
from unigate.data_dir.disk import disk_failed
from unigate.edge.access_log import (
    ACCESS_LOGGER,
    ERROR,
    MODEL_NAME,
    PROVIDER,
    AccessLog,
    finished,
    shown_path,
)
from unigate.edge.asgi import ClientDisconnected, Receive, Request, Scope, Send
from unigate.edge.endpoint_table import EndpointTable
from unigate.edge.endpoints import Endpoint
from unigate.edge.error_styles import error_status, render_error, style_for_path
from unigate.errors import (
    AuthenticationFailed,
    BudgetExceeded,
    DatabaseUnavailable,
    GatewayError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    RateLimited,
    StorageUnavailable,
)
from unigate.gateway import Gateway
from unigate.lifecycle import Lifecycle, Step
from unigate.observability.logs import InfoLines
from unigate.observability.request_ids import RequestIds
from unigate.reload import ConfigReloader
from unigate.settings import Settings
from unigate.store.db import failure_reason, is_outage

log: Final = logging.getLogger("unigate")


# The base path each client format's SDKs add to the URL they are given, and what a client
# whose calls lack it is told (a 404 for a path that exists under it).
_OPENAI_BASE: Final = (
    "/v1",
    "OpenAI-format clients take the gateway's URL followed by /v1 as base URL (e.g. http://127.0.0.1:8000/v1).",
)
_GEMINI_BASE: Final = (
    "/v1beta",
    "Gemini-format clients take the gateway's URL as base URL (e.g. http://127.0.0.1:8000), and their SDKs "
    "add /v1beta; a client that does not (LiteLLM's gemini/ models) takes the URL followed by /v1beta.",
)


class GatewayApp:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.reloader = ConfigReloader(gateway)  # SIGHUP and POST /admin/reload
        self.responses = responses.ResponsesAPI(gateway)  # owns the background-response runner
        # Batch lines run through this app's own handlers, so the engine reads the table below.
        self.batches = Batches(gateway, lambda: self.table, self.error_answer)
        endpoints: list[Endpoint] = [
            *health.endpoints(gateway),
            *text.endpoints(gateway),
            *messages.endpoints(gateway),
            *self.responses.endpoints(),
            *batches.endpoints(self.batches),
            *message_batches.endpoints(self.batches),
            *gemini.endpoints(gateway),
            *suno.endpoints(gateway),
            *audio.endpoints(gateway),
            *images.endpoints(gateway),
            *fish.endpoints(gateway),
            *stability.endpoints(gateway),
            *videos.endpoints(gateway),
            *files.endpoints(gateway),
            *video_generations.endpoints(gateway),
            *kling.endpoints(gateway),
            *veo.endpoints(gateway),
            *vidu.endpoints(gateway),
            *picwish.endpoints(gateway),
            *media.endpoints(gateway),
            *task_output.endpoints(gateway),
            *admin.endpoints(gateway),
            *admin_keys.endpoints(gateway),
            *admin_reload.endpoints(self.reloader),
            *provider_check.endpoints(gateway),
            *admin_usage.endpoints(gateway),
            *dashboard.endpoints(),
            *home.endpoints(),
            *metrics.endpoints(gateway),
            # The API description walks this same table when first asked for.
            *docs.endpoints(lambda: self.table.endpoints()),
        ]
        self.table = EndpointTable(endpoints)
        # The worker's lifespan: the gateway's services, then what serves on top of them.
        runner = self.responses.runner
        self._lifecycle = Lifecycle(
            [
                *gateway.steps(),
                Step("background responses", start=runner.start, stop=runner.stop),
                Step("batches", start=self.batches.runner.start, stop=self.batches.runner.stop),
                Step("config reloads", start=self.reloader.start, stop=self.reloader.stop),
            ],
            log,
        )
        # Bound once: a per-request call then skips the attribute and method lookups.
        self._request_id = RequestIds().for_request  # the client's x-request-id, or a fresh one
        self._key_cache, self._is_admin_key = gateway.key_cache, gateway.is_admin_key
        self._access = AccessLog(InfoLines(ACCESS_LOGGER), gateway.settings.log_format == "json")
        self._metrics = gateway.metrics
        self._count_request = gateway.metrics.request
        self._requests = gateway.request_log

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine itself: the server awaits `_http` directly, one frame less to
        # re-enter every time the request's innermost await resumes.
        kind = scope["type"]
        if kind == "http":
            return self._http(scope, receive, send)
        if kind == "lifespan":
            return self._lifespan(receive, send)
        return _nothing()

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = Request(scope, receive, send, self._request_id(scope))
        endpoint, params, allowed = self.table.match(request.method, request.path)
        principal = None
        try:
            if endpoint is None:
                if allowed:
                    raise GatewayError(
                        "Method not allowed.",
                        status=405,
                        code="method_not_allowed",
                        headers={"allow": ", ".join(allowed)},
                    )
                raise NotFound(self._unknown_path(request), code="unknown_url")
            request.params = params
            if endpoint.auth == "key":  # the only kind whose handler takes a principal
                principal = await authenticate(request, self._key_cache, self._is_admin_key)
                if principal.rpm or principal.tpm:
                    request.more_headers = self.gateway.limits.plan(principal)
                if (
                    endpoint.family
                    and not principal.may_use_family(endpoint.family)
                    and not endpoint.family_by_output  # read only on a refusal: free when allowed
                ):
                    raise PermissionDenied(
                        f"This API key may not use the {endpoint.family} family.", code="family_not_allowed"
                    )
                await endpoint.key_handler(request, principal)
            else:
                if endpoint.auth != "none":
                    self._check_admin(request, endpoint.auth)
                await endpoint.open_handler(request)
        except GatewayError as err:
            if isinstance(err, RateLimited | BudgetExceeded):
                self._count_refusal(err, endpoint)
            await self._send_error(request, err, endpoint)
        except ClientDisconnected:
            pass  # still logged below, as 499 when nothing was sent
        except Exception as exc:
            await self._send_error(request, _unexpected(request, exc), endpoint)
        key_id = principal.key_id if principal else None
        ended = time.perf_counter()
        done = finished(request, request.status, started, ended, key_id)
        if self._access.enabled():
            self._access.add(done)
        self._count_request(
            "unmatched" if endpoint is None else endpoint.label,  # `_family`, written out
            scope.get(MODEL_NAME, ""),
            scope.get(PROVIDER, ""),
            request.status or 499,
            ended - started,
        )
        if endpoint is None or endpoint.auth == "key":  # API calls, not the dashboard's own polling
            self._requests.add(done)

    def _unknown_path(self, request: Request) -> str:
        """The 404 for a path no endpoint has; when it is one under the base path its client's
        SDK adds (/v1 for OpenAI's, /v1beta for Gemini's), that path and the base URL to give."""
        message = f"No endpoint at {request.method} {shown_path(request.path)}."
        found = self._under_base(request)
        if found is None:
            return message
        path, advice, _ = found
        return f"{message} Did you mean {request.method} {shown_path(path)}? {advice}"

    def _under_base(self, request: Request) -> tuple[str, str, Endpoint | None] | None:
        """An unmatched path that exists under the base path its client's URL left out: that
        path, what to tell the client, and the endpoint there (None when only another method
        is), whose error shape the 404 takes."""
        path = request.path
        # Gemini's API names its methods after a colon (`models/x:generateContent`).
        base, advice = _GEMINI_BASE if ":" in path.rpartition("/")[2] else _OPENAI_BASE
        if path.startswith(base + "/"):
            return None
        endpoint, _, allowed = self.table.match(request.method, base + path)
        if endpoint is None and not allowed:
            return None
        return base + path, advice, endpoint

    def _check_admin(self, request: Request, kind: str = "admin") -> None:
        """The admin key as a Bearer token; for `kind` "metrics" (GET /metrics) the metrics
        token too."""
        gw = self.gateway
        metrics = kind == "metrics"
        accepts = gw.is_metrics_token if metrics else gw.is_admin_key
        if metrics:
            what = "metrics token"
            fix = (
                "GET /metrics takes 'Authorization: Bearer <token>' with the UNIGATE_METRICS_TOKEN the "
                "server was started with, or the admin key"
            )
        else:
            what = "admin key"
            fix = (
                "send 'Authorization: Bearer <admin key>' with the key `unigate serve` printed at its "
                "first start (kept in the data directory's admin_key file) or UNIGATE_ADMIN_KEY"
            )
        auth = request.header(b"authorization")
        if auth is None:
            raise AuthenticationFailed(f"Missing {what}: {fix}.", code="missing_api_key")
        scheme, _, value = auth.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not accepts(value.strip()):
            raise AuthenticationFailed(f"Invalid {what}: {fix}.", code="invalid_api_key")

    def _count_refusal(self, err: GatewayError, endpoint: Endpoint | None) -> None:
        family = _family(endpoint)
        if isinstance(err, BudgetExceeded):
            self._metrics.budget_exceeded.inc((family,))
        else:
            self._metrics.rate_limited.inc((family, err.code or ""))

    def error_answer(
        self, request: Request, err: GatewayError, endpoint: Endpoint | None
    ) -> tuple[int, bytes]:
        """The status and body an error is answered with: in the endpoint's error style (for
        paths several formats share, the request's client's), the unmatched path's otherwise.
        A batch line's error result is this same answer (batches/lines.py)."""
        if endpoint is None:
            found = self._under_base(request)
            endpoint = found[2] if found is not None else None
        if endpoint is None:
            style = style_for_path(request.path)
        elif endpoint.style_of is None:
            style = endpoint.style
        else:
            try:
                style = endpoint.style_of(request)
            except GatewayError:  # what picks the style is unreadable (a NUL in the query string)
                style = style_for_path(request.path)
        return error_status(err, style), render_error(err, style, request.request_id)

    async def _send_error(self, request: Request, err: GatewayError, endpoint: Endpoint | None) -> None:
        """The one place an error becomes a response."""
        status, body = self.error_answer(request, err, endpoint)
        request.scope[ERROR] = f"{err.code}: {err.message}" if err.code else err.message  # the request log's
        extra = [(k.encode(), v.encode()) for k, v in err.headers.items()]
        try:
            await request.respond(status, body, extra=extra)
        except RuntimeError:
            # The response had already started (a handler bug); nothing more can be sent.
            log.error("error after response start on request %s: %s", request.request_id, err.message)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._lifecycle.start()  # unwound, with its log line, if a step fails
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                # ~100k long-lived objects exist after startup (SQLAlchemy, pydantic, config);
                # full collections walking them stalled the loop ~30 ms each. Frozen, they are
                # never scanned again; request garbage is still collected normally.
                gc.collect()
                gc.freeze()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._lifecycle.stop()
                self._access.flush()  # access lines still held (InfoLines.HOLD)
                await send({"type": "lifespan.shutdown.complete"})
                return


def _unexpected(request: Request, exc: Exception) -> GatewayError:
    """The answer to a failure no handler mapped, logged: a database outage or a disk that
    took no write (full, failing) is a 503 to retry, anything else a bug (500)."""
    where = f"{request.method} {shown_path(request.path)} (request {request.request_id})"
    if is_outage(exc):
        log.warning("database unavailable on %s: %s", where, failure_reason(exc))
        return DatabaseUnavailable()
    if disk_failed(exc):  # a file write that the file store's own mapping did not cover
        log.warning("disk full or failing on %s: %s", where, failure_reason(exc))
        return StorageUnavailable(failure_reason(exc))
    if _nested_too_deep(exc):
        log.warning("refused on %s: JSON nested too deep to write out again", where)
        return _too_deep()
    # `exc_info=exc`, not `log.exception`: the traceback must not depend on the caller being
    # inside its `except` block (outside one, the record said "NoneType: None").
    log.error("unhandled error on %s", where, exc_info=exc)
    return GatewayError("Internal server error.")


def create_app(settings: Settings | None = None) -> GatewayApp:
    return GatewayApp(Gateway.build(settings or Settings.from_env()))


def app_factory(loaded: LoadedConfig | None = None) -> GatewayApp:
    """Entry point for the server's workers (`--factory`): settings come from the environment,
    the configuration from `loaded` (the server process's, cli/launch.py) while its file is
    unchanged, else from the file."""
    from unigate.observability.logs import configure_logging

    settings = Settings.from_env()
    configure_logging(settings.log_level, settings.log_format)
    config = loaded.current(settings.config_path, settings.environ) if loaded is not None else None
    return GatewayApp(Gateway.build(settings, config))


async def _nothing() -> None:
    return None


# orjson reads JSON nested up to 1,024 levels but writes at most 255: a body nested between the
# two is parsed, then fails where the gateway writes it again (a translated or stored request).
# Nothing else the gateway writes nests that deep, so that failure is the client's body.
def _nested_too_deep(exc: Exception) -> bool:
    return isinstance(exc, orjson.JSONEncodeError) and str(exc) == "Recursion limit reached"


def _too_deep() -> InvalidRequest:
    return InvalidRequest(
        "The request's JSON is nested more than 255 levels deep, more than the gateway can pass on.",
        code="nested_too_deep",
    )


def _family(endpoint: Endpoint | None) -> str:
    """The metrics' family label of a request."""
    return "unmatched" if endpoint is None else endpoint.label
