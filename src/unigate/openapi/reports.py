"""The admin reports (`api/admin/usage.py`: usage and cost, recent requests, the task list)
and the dashboard's files (`api/admin/dashboard.py`). Query parameters are typed as narrowly as the
handlers check them (api/serving/query_params.py, usage/query.py): a value outside a schema is a 400."""

from __future__ import annotations

from unigate.api.admin.dashboard import TYPES
from unigate.openapi.schema import (
    Operation,
    Schema,
    array,
    const,
    enum,
    integer,
    json_response,
    nullable,
    number,
    obj,
    query,
    ref,
    response,
    response_header,
    string,
)
from unigate.tasks.listing import STATUSES
from unigate.usage.query import BUCKETS, GROUPS

ADMIN, DASHBOARD = "admin", "dashboard"
_GROUP = "(" + "|".join(GROUPS) + ")"


def _list(item: Schema) -> Schema:
    return obj({"object": const("list"), "data": array(item)}, ["object", "data"])


def schemas() -> dict[str, Schema]:
    metrics = {
        "requests": integer(0),
        "prompt_tokens": integer(0),
        "completion_tokens": integer(0),
        "cost": number(description="At the models' prices; refunds count negative."),
        "errors": integer(0, description="Requests answered with a status of 400 or more."),
        "mean_latency_ms": nullable(number(0)),
    }
    return {
        "UsageRow": obj(
            {
                "key_id": string(),
                "endpoint": string("e.g. chat, music.MUSIC"),
                "model": string(),
                "provider": string(),
                "bucket": string("The bucket's start, ISO 8601 UTC (with `bucket`)."),
                "bucket_start": integer(0, description="The bucket's start in Unix seconds."),
                **metrics,
            },
            list(metrics),
            "The groups asked for (`group_by`; key, endpoint and model by default), the bucket, "
            "then the sums.",
        ),
        "RequestLogRow": obj(
            {
                "request_id": string(),
                "created_at": number(description="Unix seconds."),
                "method": string(),
                "path": string("As the access log shows it (media names cut)."),
                "status": integer(100, 599),
                "latency_ms": number(0),
                "model": nullable(string()),
                "route": nullable(string("provider/upstream model")),
                "key_id": nullable(string()),
                "outcome": nullable(integer(description="How a stream ended when not cleanly (499, 502).")),
                "error": nullable(string("The error answered: `code: message` (null for a success).")),
            },
            ["request_id", "created_at", "method", "path", "status", "latency_ms", "model"],
        ),
        "TaskListRow": obj(
            {
                "id": string(),
                "key_id": string(),
                "family": string(),
                "action": string(),
                "model": string(),
                "provider": string(),
                "status": string(),
                "progress": integer(0, 100),
                "fail_reason": string(),
                "price": number(),
                "created_at": number(),
                "updated_at": number(),
                "webhook": enum("none", "active", "gone"),
                "webhook_delivery": {
                    "enum": ["delivered", "pending", "failed", "skipped", None],
                    "description": "Failed if an event ran out of retries, else pending while any is "
                    "to be sent, else delivered; null without a webhook.",
                },
                "webhook_events": obj(
                    {}, description="Events per delivery state.", additionalProperties=integer(0)
                ),
            },
            ["id", "key_id", "status", "webhook", "webhook_delivery", "webhook_events"],
        ),
    }


def _key_id() -> Schema:
    return query("key_id", string(minLength=1, maxLength=40), "Only this key's.")


def _limit(default: int, most: int) -> Schema:
    return query("limit", integer(1, most, description=f"Default {default}."), "How many, newest first.")


def _admin() -> list[Operation]:
    instant = string("Unix seconds (e.g. 1767225600) or ISO 8601 (2026-01-01, 2026-01-01T12:00:00Z); UTC.")
    return [
        Operation(
            "GET",
            "/admin/usage",
            "usage",
            "Usage and cost, grouped and per time bucket",
            ADMIN,
            {
                "200": response(
                    "The report (CSV with `format=csv` or `Accept: text/csv`).",
                    {"application/json": _list(ref("UsageRow")), "text/csv": string()},
                )
            },
            parameters=(
                query(
                    "group_by",
                    string(pattern=f"^ *$|^ *{_GROUP} *(, *{_GROUP} *)*$"),
                    "Comma-separated groups; default key,endpoint,model; empty: totals.",
                ),
                query("since", instant, "From this time on."),
                query("until", instant, "Before this time."),
                query("bucket", enum(*BUCKETS), "Per time bucket, aligned in UTC."),
                query("format", enum("json", "csv")),
            ),
            description="Chat, streams, every other call and task submits alike.",
        ),
        Operation(
            "GET",
            "/admin/requests",
            "recentRequests",
            "The newest requests: status, latency, model, route, key",
            ADMIN,
            {"200": json_response("Newest first.", _list(ref("RequestLogRow")))},
            parameters=(
                _limit(100, 1000),
                _key_id(),
                query(
                    "status",
                    string(pattern="^([1-5][0-9][0-9]|[1-5]xx|error)$"),
                    "A status (429), a class (4xx) or `error` (400 and above).",
                ),
            ),
            description="API calls only (not the admin API's); the newest 10,000 of the last 24 h.",
        ),
        Operation(
            "GET",
            "/admin/tasks",
            "adminTasks",
            "Tasks with their status and webhook delivery",
            ADMIN,
            {"200": json_response("Newest first.", _list(ref("TaskListRow")))},
            parameters=(_limit(50, 500), _key_id(), query("status", enum(*STATUSES))),
        ),
    ]


def _dashboard() -> list[Operation]:
    security = {
        "content-security-policy": response_header("Scripts from this origin only.", required=True),
        "x-frame-options": response_header("DENY", required=True),
        "etag": response_header("For If-None-Match.", required=True),
    }
    files = {t.decode().split(";")[0]: string() for t in TYPES.values()}
    page = {
        "200": response("The page (no secret in it).", {"text/html": string()}, security),
        "304": response("Unchanged since the ETag sent."),
    }
    return [
        Operation("GET", "/dashboard", "dashboard", "The admin dashboard", DASHBOARD, page),
        Operation("GET", "/dashboard/", "dashboardSlash", "The admin dashboard", DASHBOARD, page),
        Operation(
            "GET",
            "/favicon.ico",
            "favicon",
            "The gateway's icon (an SVG), for browsers",
            DASHBOARD,
            {
                "200": response("The icon.", {"image/svg+xml": string()}, security),
                "304": response("Unchanged since the ETag sent."),
            },
        ),
        Operation(
            "GET",
            "/dashboard/{name}",
            "dashboardFile",
            "The dashboard's scripts, styles and vendored libraries",
            DASHBOARD,
            {
                "200": response("The file.", files, security),
                "304": response("Unchanged since the ETag sent."),
            },
        ),
    ]


def operations() -> list[Operation]:
    return [*_admin(), *_dashboard()]
