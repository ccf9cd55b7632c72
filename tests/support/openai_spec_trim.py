"""Cut OpenAI's published API description down to what the conformance test reads.

    python -m tests.support.openai_spec_trim <openapi.json from openai/openai-openapi> <commit> <date>

writes `tests/fixtures/openai-openapi/openai-trimmed.json`: the operations the gateway serves
in OpenAI's shape (their success responses, stream events and error bodies) and every schema
they reference, with only the documentation keywords (descriptions, examples, titles, the
`x-oai*` annotations) dropped. Nothing that constrains a value is changed, so a body valid
against the trimmed file is valid against the published one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "openai-openapi" / "openai-trimmed.json"
# The published paths (no /v1 prefix) the gateway serves in OpenAI's shape.
PATHS = (
    "/chat/completions",
    "/completions",
    "/embeddings",
    "/models",
    "/models/{model}",
    "/images/generations",
    "/images/edits",
    "/audio/speech",
    "/audio/transcriptions",
    "/audio/translations",
    "/moderations",
    "/responses",
    "/responses/{response_id}",
    "/responses/{response_id}/cancel",
    "/responses/{response_id}/input_items",
    "/videos",
    "/videos/{video_id}",
    "/videos/{video_id}/content",
    "/videos/{video_id}/remix",
)
EXTRA_SCHEMAS = ("ErrorResponse",)  # the body of every OpenAI error answer
_DOCUMENTATION = {"description", "example", "examples", "title", "summary"}
_SCHEMA_PREFIX = "#/components/schemas/"


def _strip(node: Any, in_properties: bool = False) -> Any:
    """`node` without documentation keywords (a property may itself be called `title`)."""
    if isinstance(node, dict):
        return {
            key: _strip(value, key == "properties" and not in_properties)
            for key, value in node.items()
            if in_properties or (key not in _DOCUMENTATION and not key.startswith("x-oai"))
        }
    if isinstance(node, list):
        return [_strip(value) for value in node]
    return node


def trim(spec: dict[str, Any], commit: str, date: str) -> dict[str, Any]:
    schemas: dict[str, Any] = spec["components"]["schemas"]
    kept: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_SCHEMA_PREFIX):
                name = ref[len(_SCHEMA_PREFIX) :]
                if name not in kept:
                    kept[name] = schemas[name]
                    walk(schemas[name])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    paths: dict[str, Any] = {}
    for path in PATHS:
        item = {
            method: {"operationId": op.get("operationId"), "responses": op.get("responses", {})}
            for method, op in spec["paths"][path].items()
            if method in ("get", "post", "delete")
        }
        walk(item)
        paths[path] = item
    for name in EXTRA_SCHEMAS:
        walk({"$ref": _SCHEMA_PREFIX + name})
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": spec["info"]["title"],
            "version": spec["info"]["version"],
            "x-source": f"github.com/openai/openai-openapi openapi.json at {commit} ({date})",
        },
        "paths": _strip(paths),
        "components": {"schemas": {name: _strip(kept[name]) for name in sorted(kept)}},
    }


def main(argv: list[str]) -> None:
    source, commit, date = argv
    spec = orjson.loads(Path(source).read_bytes())
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_bytes(orjson.dumps(trim(spec, commit, date), option=orjson.OPT_INDENT_2) + b"\n")


if __name__ == "__main__":
    main(sys.argv[1:])
