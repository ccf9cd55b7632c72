"""The admin API for API keys (`api/admin/keys.py`): bodies as `api/admin/key_spec.py` validates
them (strict types, no unknown fields) and the key record `Principal.public_view` renders."""

from __future__ import annotations

from typing import Any, get_args

from unigate.api.admin import key_spec
from unigate.config import Family
from unigate.openapi.schema import (
    Operation,
    Schema,
    any_of,
    array,
    const,
    json_body,
    json_response,
    link,
    number,
    obj,
    ref,
    string,
)

TAG = "admin"


def _time() -> Schema:
    return {"type": ["number", "null"], "description": "Unix seconds."}


def _fields() -> dict[str, Schema]:
    """The settable fields; `PATCH` takes the same ones, each optional, null removing a limit."""
    glob = string(minLength=1, maxLength=key_spec.MAX_GLOB, description="A model glob, e.g. gpt-4o*.")
    lists: dict[str, Any] = {"type": "array"}
    return {
        "name": string(
            minLength=1, maxLength=key_spec.MAX_NAME, description="Not blank; no control characters."
        ),
        "models": {**lists, "items": glob, "maxItems": key_spec.MAX_GLOBS, "description": "None: all."},
        "families": {
            **lists,
            "items": {"enum": list(get_args(Family))},
            "maxItems": 50,
            "description": "None: all.",
        },
        "rpm": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": key_spec.MAX_RPM,
            "description": "Requests per minute; null: no limit.",
        },
        "tpm": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": key_spec.MAX_TPM,
            "description": "Tokens per minute; null: no limit.",
        },
        "budget": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": key_spec.MAX_BUDGET,
            "description": "Money at the models' prices, per `budget_period`; null: none.",
        },
        "budget_period": {"enum": list(get_args(key_spec.BudgetPeriod)), "description": "total (default)."},
        "expires_at": any_of(
            string(maxLength=64, description="ISO 8601 date (its start, UTC) or datetime, or epoch seconds."),
            number(),
            {"type": "null"},
            description="In the future, and no later than 9999-12-31T23:59:59Z.",
        ),
    }


def _record(*extra: str) -> Schema:
    props: dict[str, Schema] = {
        "id": string(),
        "name": string(),
        "prefix": string("The key's first characters, for recognising it."),
        "models": array(string(), description="Allowed model globs; empty: all."),
        "families": array(string(), description="Allowed families; empty: all."),
        "rpm": {"type": ["integer", "null"]},
        "tpm": {"type": ["integer", "null"]},
        "budget": {"type": ["number", "null"]},
        "budget_period": string(),
        "expires_at": _time(),
        "revoked_at": _time(),
        "created_at": number(),
    }
    extras = {"key": string("The key itself, shown only here."), "webhook_secret": string("whsec_…")}
    props.update({name: extras[name] for name in extra})
    return obj(props, list(props))


def schemas() -> dict[str, Schema]:
    return {
        "KeyCreateRequest": obj(_fields(), ["name"], closed=True),
        "KeyUpdateRequest": obj(
            _fields(),
            closed=True,
            description="Only the fields given change; null removes a limit, a budget or an expiry "
            "(name, models, families and budget_period cannot be null).",
        ),
        "KeyRecord": _record(),
        "KeyWithSecret": _record("webhook_secret"),
        "CreatedKey": _record("key", "webhook_secret"),
    }


def operations() -> list[Operation]:
    record = {"200": json_response("The key's record.", ref("KeyRecord"))}
    return [
        Operation(
            "POST",
            "/admin/keys",
            "createKey",
            "Create an API key",
            TAG,
            {"201": json_response("The key (shown once) and its record.", ref("CreatedKey"))},
            json_body(ref("KeyCreateRequest"), {"name": "my-app", "families": ["text"], "rpm": 600}),
            links={
                "get": link("getKey", "The key's record.", key_id="$response.body#/id"),
                "update": link("updateKey", "Change its limits or scope.", key_id="$response.body#/id"),
                "revoke": link("revokeKey", "Revoke it.", key_id="$response.body#/id"),
            },
        ),
        Operation(
            "GET",
            "/admin/keys",
            "listKeys",
            "All keys",
            TAG,
            {
                "200": json_response(
                    "Every key's record (never the key).",
                    obj({"object": const("list"), "data": array(ref("KeyRecord"))}, ["object", "data"]),
                )
            },
        ),
        Operation(
            "GET",
            "/admin/keys/{key_id}",
            "getKey",
            "One key",
            TAG,
            {"200": json_response("The key's record and webhook secret.", ref("KeyWithSecret"))},
        ),
        Operation(
            "PATCH",
            "/admin/keys/{key_id}",
            "updateKey",
            "Change a key's name, scope, limits, budget or expiry",
            TAG,
            record,
            json_body(ref("KeyUpdateRequest")),
            description="Applies to the next request on every worker, without a restart.",
        ),
        Operation(
            "DELETE",
            "/admin/keys/{key_id}",
            "revokeKey",
            "Revoke a key",
            TAG,
            record,
            description="Takes effect at once on this worker, within a second on the others.",
        ),
    ]
