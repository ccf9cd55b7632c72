"""The endpoints outside the model families: the admin API (`api/admin/resources.py`, admin key; keys
are keys.py, usage and the other reports reports.py), health (`api/unigate/health.py`), the media the
gateway serves itself (`api/serving/media.py`, `api/serving/task_output.py`) and this description with its
viewer (`api/unigate/docs.py`); the last three need no key."""

from __future__ import annotations

from unigate.edge.media_types import STORED_TYPES, UNVERIFIED_TYPE
from unigate.openapi.schema import (
    Operation,
    Schema,
    any_of,
    array,
    binary,
    boolean,
    const,
    enum,
    integer,
    json_response,
    number,
    obj,
    redirect,
    ref,
    response,
    response_header,
    string,
)
from unigate.records.outputs import VARIANT_KEYS

ADMIN, HEALTH, MEDIA, DOCS = "admin", "health", "media", "docs"
_TIME = {"type": ["number", "null"], "description": "Unix seconds."}


# The record of each path family's tasks (tasks/shapes.py), as its own fetch shows it.
_RECORDS = ("MusicTask", "Video", "VideoGeneration", "KlingTask", "VeoOperation", "ViduTask", "PicWishTask")


def _list(item: Schema) -> Schema:
    return obj({"object": const("list"), "data": array(item)}, ["object", "data"])


def _changes() -> Schema:
    names = array(string())
    return obj({"added": names, "removed": names, "changed": names}, ["added", "removed", "changed"])


def schemas() -> dict[str, Schema]:
    health = obj(
        {"consecutive_failures": number(0), "cooldown_remaining": number(0)},
        ["consecutive_failures", "cooldown_remaining"],
    )
    route = obj(
        {
            "provider": string(),
            "model": string(),
            "priority": integer(),
            "weight": number(),
            "health": health,
        },
        ["provider", "health"],
    )
    return {
        "ConfigReload": obj(
            {
                "object": const("config.reload"),
                "config": {
                    "type": ["string", "null"],
                    "description": "The file read; null: the built-in config.",
                },
                "changed": boolean("Whether anything that applies now changed."),
                "providers": _changes(),
                "models": _changes(),
                "settings": array(string(), "Other keys that changed and apply now (routing, music, media)."),
                "restart_required": array(
                    string(),
                    "Keys the file changed that apply only at the next start (limits, tasks, public_url).",
                ),
                "summary": string("The line the reload logged."),
            },
            ["object", "config", "changed", "providers", "models", "settings", "restart_required", "summary"],
        ),
        "ProviderCheck": obj(
            {
                "name": string(),
                "protocol": string(),
                "base_url": string(),
                "ok": {
                    "type": ["boolean", "null"],
                    "description": "null: the protocol has no request to check with.",
                },
                "problem": {
                    "type": ["string", "null"],
                    "description": (
                        "What failed: DNS, connect, TLS, HTTP 401/403 (the key), 404 (the base URL), "
                        "a redirect..."
                    ),
                },
                "fix": {"type": ["string", "null"], "description": "What to change."},
                "models": array(string(), "The models the upstream listed."),
            },
            ["name", "protocol", "base_url", "ok", "problem", "fix", "models"],
        ),
        "ProviderInfo": obj(
            {"name": string(), "protocol": string(), "base_url": string(), "capabilities": array(string())},
            ["name", "protocol", "base_url", "capabilities"],
        ),
        "ModelRoutes": obj(
            {"name": string(), "price_per_call": number(0), "routes": array(route)},
            ["name", "price_per_call", "routes"],
        ),
        "AdminTask": obj(
            {
                "id": string(),
                "key_id": string(),
                "family": string(),
                "action": string(),
                "model": string(),
                "provider": string(),
                "upstream_id": string(),
                "status": string(),
                "progress": integer(0, 100),
                "fail_reason": string(),
                "price": number(),
                "clip_ids": array(string()),
                "poll_attempts": integer(0),
                "next_poll_at": number(),
                "deadline_at": number(),
                "ledger": array(obj({"kind": string(), "amount": number()}, ["kind", "amount"])),
                "events": array(
                    obj({"id": integer(), "state": string(), "attempts": integer(0)}, ["id", "state"])
                ),
                "record": any_of(
                    *(ref(name) for name in _RECORDS),
                    description="The task as its family's fetch endpoint shows it.",
                ),
            },
            [
                "id",
                "key_id",
                "family",
                "action",
                "model",
                "provider",
                "upstream_id",
                "status",
                "progress",
                "ledger",
                "events",
                "record",
            ],
        ),
    }


def _admin() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/admin/providers",
            "providers",
            "Configured providers",
            ADMIN,
            {"200": json_response("The providers.", _list(ref("ProviderInfo")))},
        ),
        Operation(
            "GET",
            "/admin/models",
            "models",
            "Models, routes and their cooldown state",
            ADMIN,
            {"200": json_response("The models.", _list(ref("ModelRoutes")))},
        ),
        Operation(
            "GET",
            "/metrics",
            "metrics",
            "Prometheus metrics",
            ADMIN,
            {"200": response("The Prometheus text format, all workers merged.", {"text/plain": string()})},
            description="The admin key, or UNIGATE_METRICS_TOKEN, as Bearer.",
        ),
        Operation(
            "POST",
            "/admin/reload",
            "reloadConfig",
            "Reload the config file",
            ADMIN,
            {"200": json_response("Applied; what changed.", ref("ConfigReload"))},
            description=(
                "Reads the YAML config file again and applies its providers, models (routes, prices, "
                "limits), routing and defaults to new requests; every other worker of every replica "
                "on the same database re-reads its own copy of the file within a second. Requests "
                "under way finish as they started. A file that does not load is a 400 "
                "`invalid_config` with its error, the running configuration stays, and nothing is "
                "sent to the other workers."
            ),
        ),
        Operation(
            "POST",
            "/admin/providers/check",
            "checkProviders",
            "Check every provider",
            ADMIN,
            {
                "200": json_response(
                    "One result per provider.",
                    obj({"object": const("list"), "data": array(ref("ProviderCheck"))}, ["object", "data"]),
                )
            },
            description=(
                "Sends one cheap request (the upstream's model list) through each provider and says "
                "what failed and how to fix it: DNS, connect, TLS, the key (401/403), the base URL "
                "(404, redirects). The same as `unigate providers check`."
            ),
        ),
        Operation(
            "GET",
            "/admin/tasks/{task_id}",
            "adminTask",
            "A task's internals",
            ADMIN,
            {
                "200": json_response(
                    "Upstream id, provider, billing ledger, webhook delivery.", ref("AdminTask")
                )
            },
        ),
    ]


def _media() -> list[Operation]:
    """`/media/…` for GET and HEAD (players probe with HEAD): a stored file goes out as the type
    its content proves, or as an octet-stream attachment when it is not what its name says."""
    stored = {t.decode().split(";")[0] for t, _ in STORED_TYPES.values()}
    types = sorted(stored | {UNVERIFIED_TYPE.decode()})
    headers = {
        "x-content-type-options": response_header("nosniff", required=True),
        "cache-control": response_header("Stored media never changes."),
    }
    task_path = "/media/tasks/{task_id}/{index}/{variant}"
    task_params = {"index": string(pattern="^[0-9]+$"), "variant": enum(*VARIANT_KEYS)}
    out = []
    for method in ("GET", "HEAD"):
        head = method == "HEAD"
        suffix = "Head" if head else ""
        content = None if head else {t: binary() for t in types}
        out += [
            Operation(
                method,
                "/media/{name}",
                "media" + suffix,
                "A file the gateway stores" + (" (headers only)" if head else ""),
                MEDIA,
                {"200": response("The file.", content, headers)},
                description="Sandbox results and uploads; names are unguessable, so no key is needed.",
            ),
            Operation(
                method,
                task_path,
                "taskMedia" + suffix,
                "A task's file, fetched for the client" + (" (headers only)" if head else ""),
                MEDIA,
                {"200": response("The file.", content), "302": redirect()},
                path_schemas=task_params,
                description="Files an upstream hands out only against the gateway's credentials.",
            ),
        ]
    return out


def _public() -> list[Operation]:
    ready = obj(
        {
            "status": enum("ready", "unavailable"),
            "database": enum("ok", "unreachable", description="The database (SQLite or PostgreSQL)."),
            "redis": enum(
                "ok",
                "unreachable",
                "not configured",
                description="UNIGATE_REDIS_URL's Redis; unreachable does not make the replica unready.",
            ),
        },
        ["status", "database", "redis"],
    )
    return [
        Operation(
            "GET",
            "/healthz",
            "healthz",
            "Alive",
            HEALTH,
            {"200": json_response("The process answers.", obj({"status": const("ok")}, ["status"]))},
        ),
        Operation(
            "GET",
            "/readyz",
            "readyz",
            "Ready (database reachable)",
            HEALTH,
            {
                "200": json_response("Ready: the database answers (Redis may not).", ready),
                "503": json_response(
                    "The database is unreachable: take this replica out of the pool.", ready
                ),
            },
            description=(
                "Checks the database and Redis separately, each within about a second even when one "
                "hangs. Only the database decides: without Redis the limits fall back to each "
                "replica's own counters and changes still reach every replica through the database, "
                "so a Redis outage must not take every replica out of the pool at once."
            ),
        ),
        *_media(),
        Operation(
            "GET",
            "/openapi.json",
            "openapi",
            "This description",
            DOCS,
            {
                "200": json_response(
                    "OpenAPI 3.1.",
                    obj(
                        {"openapi": string(), "info": obj({}), "paths": obj({})}, ["openapi", "info", "paths"]
                    ),
                )
            },
        ),
        Operation(
            "GET",
            "/",
            "home",
            "Where to go from here",
            DOCS,
            {
                "200": response(
                    "Links to /docs, /dashboard and /v1/models: a page for a browser (Accept: text/html), "
                    "else JSON.",
                    {
                        "application/json": obj(
                            {
                                "object": const("unigate"),
                                "version": string(),
                                "message": string(),
                                "links": obj({}),
                            },
                            ["object", "version", "links"],
                        ),
                        "text/html": string(),
                    },
                )
            },
        ),
        Operation(
            "GET",
            "/docs",
            "docs",
            "Swagger UI for this description",
            DOCS,
            {"200": response("The page.", {"text/html": string()})},
        ),
        Operation(
            "GET",
            "/docs/assets/{name}",
            "docsAsset",
            "Swagger UI's files",
            DOCS,
            {"200": response("The file.", {"text/javascript": string(), "text/css": string()})},
        ),
    ]


def operations() -> list[Operation]:
    return [*_admin(), *_public()]
