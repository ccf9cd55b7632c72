"""The API description and the endpoint table stay in sync: every (method, path) the server
routes is documented and every documented operation is routed; the document is valid
OpenAPI 3.1 and says what each endpoint's auth kind and error style say."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from unigate.app import GatewayApp, create_app
from unigate.edge.endpoints import Endpoint
from unigate.openapi.builder import build, coverage, operations
from unigate.settings import Settings

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayApp]:
    data = tmp_path_factory.mktemp("openapi")
    yield create_app(Settings.from_env({"UNIGATE_DATA_DIR": str(data)}))


@pytest.fixture(scope="module")
def document(app: GatewayApp) -> dict[str, Any]:
    # What GET /openapi.json serves, through JSON as a client reads it.
    return dict(orjson.loads(orjson.dumps(build(app.table.endpoints()))))


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): op
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }


def _endpoints(app: GatewayApp) -> dict[tuple[str, str], Endpoint]:
    return {(ep.method, ep.path): ep for ep in app.table.endpoints()}


def test_every_endpoint_is_documented_and_every_operation_routed(
    app: GatewayApp, document: dict[str, Any]
) -> None:
    served = set(_endpoints(app))
    documented = set(_operations(document))
    assert sorted(served - documented) == [], "endpoints missing from /openapi.json"
    assert sorted(documented - served) == [], "documented operations no endpoint serves"
    missing, stale = coverage(app.table.endpoints())
    assert (missing, stale) == ([], []), "add (or remove) the Operation in src/unigate/openapi/<family>.py"
    assert set(operations()) == served


def test_valid_openapi_31(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == "1.0.0"
    errors = [
        f"{e.instance_path}: {e.message[:200]}"
        for e in jsonschema_rs.validator_for(OPENAPI_31).iter_errors(document)
    ]
    assert errors == []
    ids = [op["operationId"] for op in _operations(document).values()]
    assert len(ids) == len(set(ids))
    # Every reference resolves.
    text = orjson.dumps(document).decode()
    for name in set(re.findall(r'"#/components/schemas/([^"]+)"', text)):
        assert name in document["components"]["schemas"], name
    for name in set(re.findall(r'"#/components/securitySchemes/([^"]+)"', text)):
        assert name in document["components"]["securitySchemes"], name
    # Every link names an operation, and only parameters that operation has.
    by_id = {op["operationId"]: op for op in _operations(document).values()}
    for op in _operations(document).values():
        for response in op["responses"].values():
            for name, link in response.get("links", {}).items():
                target = by_id[link["operationId"]]
                assert set(link["parameters"]) <= {p["name"] for p in target.get("parameters", [])}, name


def test_auth_and_error_shape_follow_the_endpoint(app: GatewayApp, document: dict[str, Any]) -> None:
    style_schema = {
        "openai": "OpenAIError",
        "music": "MusicError",
        "anthropic": "AnthropicError",
        "gemini": "GeminiError",
        "fish": "FishError",
        "kling": "KlingError",
        "vidu": "ViduError",
        "picwish": "PicWishError",
        "stability": "StabilityError",
        "plain": "PlainError",
    }
    schemes = document["components"]["securitySchemes"]
    for key, op in _operations(document).items():
        ep = _endpoints(app)[key]
        names = {name for alternative in op["security"] for name in alternative}
        assert names <= set(schemes)
        if ep.auth == "none":
            assert op["security"] == [], key
        elif ep.auth == "admin":
            assert names == {"adminBearer"}, key
        elif ep.auth == "metrics":
            assert names == {"adminBearer", "metricsBearer"}, key
        else:
            assert "bearer" in names, key
        error = op["responses"]["default"]["content"]["application/json"]["schema"]
        shown = orjson.dumps(error).decode()
        assert style_schema[ep.style] in shown, key
        assert op["responses"]["default"]["headers"]["x-request-id"]["required"] is True
        successes = [s for s in op["responses"] if s.startswith(("2", "3"))]
        assert successes, key


def test_family_header_forms(document: dict[str, Any]) -> None:
    def names(method: str, path: str) -> set[str]:
        op = _operations(document)[(method, path)]
        return {name for alternative in op["security"] for name in alternative}

    assert names("POST", "/v1/messages") == {"bearer", "apiKey"}
    assert names("POST", "/v1beta/models/{model}:generateContent") == {"bearer", "googApiKey", "googKey"}
    assert names("POST", "/ent/v2/text2audio") == {"bearer", "token"}
    assert names("POST", "/api/tasks/visual/{tool}") == {"bearer", "apiKey"}
    assert names("GET", "/admin/keys") == {"adminBearer"}
    assert names("GET", "/healthz") == set()


def test_music_submit_matches_the_record(document: dict[str, Any]) -> None:
    op = _operations(document)[("POST", "/suno/submit/music")]
    assert op["deprecated"] is False
    schemas = document["components"]["schemas"]
    submit = schemas["MusicSubmitRequest"]["properties"]
    assert {"prompt", "gpt_description_prompt", "make_instrumental", "mv", "title", "tags", "task"} <= set(
        submit
    )
    assert {"continue_clip_id", "continue_at", "notify_hook"} <= set(submit)
    # The record has every field music/record.py renders, all required.
    from unigate.music.record import music_record, render_clip
    from unigate.tasks.model import Task

    task = Task(
        "t", "k", "music", "MUSIC", "chirp-v4", "p", "u", "SUBMITTED", 0, "", 1, 1, 0, "", {}, {}, "", 0.0
    )
    task.clip_ids = ["c1", "c2"]
    record = music_record(task)
    assert set(schemas["MusicTask"]["required"]) == set(record)
    clip = render_clip(task, 0, "c1", None)
    assert set(schemas["MusicClip"]["required"]) == set(clip)
    envelope = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert envelope == {"$ref": "#/components/schemas/MusicTaskEnvelope"}


def test_viewer_assets_are_vendored() -> None:
    from unigate.api.unigate.docs import ASSETS

    for name, (path, _) in ASSETS.items():
        assert Path(path).is_file(), name
