"""Admin reports (admin key as Bearer): `GET /admin/usage` (usage and cost, grouped and
bucketed; JSON or CSV), `GET /admin/requests` (the newest requests) and `GET /admin/tasks`
(tasks with their webhook delivery state). The queries live in usage/query.py,
usage/request_log.py and tasks/listing.py; these handlers only check parameters and answer."""

from __future__ import annotations

from unigate.api.serving.query_params import key_id_param, limit_param, query_params, status_range
from unigate.edge.asgi import Request, send_body, send_json
from unigate.edge.endpoints import Endpoint
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.tasks.listing import STATUSES, list_tasks
from unigate.usage import query as usage_query

_CSV = b"text/csv; charset=utf-8"


def endpoints(gw: Gateway) -> list[Endpoint]:
    async def usage(request: Request) -> None:
        params = query_params(request, (*usage_query.PARAMS, "format"))
        as_csv = _wants_csv(request, params.get("format"))
        query = usage_query.UsageQuery.parse(params)
        # This process's last second of calls is in the answer too, unless the database
        # cannot take them now (a full disk): the report is still answered.
        await gw.usage.flush(required=False)
        rows = await usage_query.run(gw.engine, query)
        if as_csv:
            disposition = (b"content-disposition", b'attachment; filename="unigate-usage.csv"')
            await send_body(request.send, 200, usage_query.to_csv(query, rows), _CSV, [disposition])
        else:
            await send_json(request.send, 200, {"object": "list", "data": rows})

    async def requests(request: Request) -> None:
        params = query_params(request, ("limit", "key_id", "status"))
        rows = await gw.request_log.recent(
            limit_param(params, 100, 1000), key_id_param(params), status_range(params)
        )
        await send_json(request.send, 200, {"object": "list", "data": rows})

    async def tasks(request: Request) -> None:
        params = query_params(request, ("limit", "key_id", "status"))
        status = params.get("status")
        if status is not None and status not in STATUSES:
            raise InvalidRequest(
                f"'status' must be one of {', '.join(STATUSES)}.", param="status", code="invalid_value"
            )
        rows = await list_tasks(
            gw.engine, limit=limit_param(params, 50, 500), status=status, key_id=key_id_param(params)
        )
        await send_json(request.send, 200, {"object": "list", "data": rows})

    # Registered after api/admin/resources.py's endpoints: this `GET /admin/usage` replaces the older one
    # (same answer without parameters, plus the new fields).
    return [
        Endpoint("GET", "/admin/usage", usage, auth="admin"),
        Endpoint("GET", "/admin/requests", requests, auth="admin"),
        Endpoint("GET", "/admin/tasks", tasks, auth="admin"),
    ]


def _wants_csv(request: Request, fmt: str | None) -> bool:
    """`format=csv|json` decides; without it, an Accept header naming text/csv does."""
    if fmt is not None:
        if fmt not in ("csv", "json"):
            raise InvalidRequest("'format' must be csv or json.", param="format", code="invalid_value")
        return fmt == "csv"
    accept = request.header(b"accept")
    return accept is not None and b"text/csv" in accept.lower()
