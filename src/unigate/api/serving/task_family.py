"""What every asynchronous path family's router shares: model lookup and permission, submit
through the task engine (price reserved, callback registered), owner- and family-scoped
fetches, and callback URL checks. A family router only parses its own request format and
renders the task in its own shape."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from unigate.api.serving.public_url import configured_base, public_base
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_body
from unigate.errors import InvalidRequest, NotFound
from unigate.gateway import Gateway
from unigate.providers.base import TaskSubmission
from unigate.routing.catalog import ModelEntry
from unigate.tasks.idempotency import header_value
from unigate.tasks.model import Task
from unigate.tasks.service import Pinned
from unigate.webhooks.ssrf import UnsafeURL, check_url, refusal

MAX_CALLBACK = 2048


class TaskFamily:
    """One path family's view of the task engine: tasks it creates carry `family`, and only
    its own paths find them again (another family's id looks unknown: 404)."""

    def __init__(self, gw: Gateway, family: str) -> None:
        self.gw = gw
        self.family = family
        self.public_url = configured_base(gw)
        self.tasks = gw.tasks
        self.serving = Serving(gw)
        self.allow_private = gw.allow_private_webhooks

    def model(self, principal: Principal, model: str) -> ModelEntry:
        """The model's routes; 404 for an unknown model, 403 for one the key may not use."""
        return self.serving.resolve(principal, model)

    def callback(self, payload: dict[str, Any], name: str = "callback_url") -> str:
        """A callback URL from the request, checked against the SSRF policy now (and again
        at delivery time, on the address actually dialled); "" when absent."""
        value = payload.get(name)
        if value is None or value == "":
            return ""
        if not isinstance(value, str) or len(value) > MAX_CALLBACK:
            raise InvalidRequest(
                f"'{name}' must be a URL of at most {MAX_CALLBACK} characters.",
                param=name,
                code="invalid_value",
            )
        try:
            check_url(value.strip(), allow_private=self.allow_private)
        except UnsafeURL as exc:
            raise InvalidRequest(
                f"'{name}' was refused: {refusal(exc)}.", param=name, code="invalid_callback"
            ) from None
        return value.strip()

    async def submit(
        self,
        request: Request,
        principal: Principal,
        job: TaskSubmission,
        route: ModelEntry | Pinned,
        *,
        callback: str = "",
        external_id: str = "",
        stored_fields: dict[str, Any] | None = None,
        precheck: Callable[[], Awaitable[None]] | None = None,
        picked: tuple[str, ...] = (),
    ) -> Task:
        """Submit upstream, then commit the task (answer only once it is durable). The model's
        `price_per_call` is reserved now and refunded once if the task fails. A request with
        an `Idempotency-Key` that repeats an earlier one gets that task back (`precheck`,
        e.g. a duplicate check, runs only for a new submit; `picked` names fields the gateway
        chose itself, left out when requests are compared)."""
        price = route.price_per_call if isinstance(route, ModelEntry) else self._price(job.model)
        return await self.tasks.submit(
            principal,
            job,
            route,
            price=price,
            notify_hook=callback,
            public_base=public_base(request, self.public_url),
            stored_fields=stored_fields,
            external_id=external_id,
            idempotency_key=idempotency_key(request),
            precheck=precheck,
            picked=picked,
        )

    def _price(self, model: str) -> float:
        entry = self.gw.catalog.resolve(model)
        return entry.price_per_call if entry is not None else 0.0

    async def get(self, principal: Principal, task_id: str, message: str = "No task with this id.") -> Task:
        """The caller's task of this family, or 404."""
        task = await self.tasks.fetch(principal, task_id, self.family)
        if task is None:
            raise NotFound(message, code="task_not_found")
        return task

    async def get_rendered(
        self, principal: Principal, task_id: str, message: str = "No task with this id."
    ) -> bytes:
        """The caller's task of this family as its rendered record (cached per version)."""
        body = await self.tasks.fetch_rendered(principal, task_id, self.family)
        if body is None:
            raise NotFound(message, code="task_not_found")
        return body


def idempotency_key(request: Request) -> str | None:
    """The request's `Idempotency-Key` (400 when malformed), or None."""
    return header_value(request.header(b"idempotency-key"), request.header_count(b"idempotency-key"))


async def send_raw(
    request: Request, body: bytes, status: int = 200, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    """A JSON body already serialised, with the request id."""
    headers = [(b"x-request-id", request.request_id.encode()), *(extra or [])]
    await send_body(request.send, status, body, extra=headers)
