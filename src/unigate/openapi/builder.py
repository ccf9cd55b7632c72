"""Assemble the OpenAPI 3.1 document from the endpoint table and the family modules.

The paths come from walking the table: each (method, path) the server routes is joined with
the `Operation` its family module declares under the same key. Security, path parameters and
error responses are derived from the `Endpoint` (edge.py). An endpoint without an operation,
or an operation without an endpoint, is reported by `coverage()` (tests/unit/test_openapi.py
fails CI on either) and logged when the document is built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from unigate.edge.endpoints import Endpoint
from unigate.openapi import (
    admin,
    anthropic,
    audio,
    batches,
    edge,
    files,
    gemini,
    images,
    jobs,
    keys,
    moderations,
    music,
    reports,
    responses,
    text,
    video,
    video_vendors,
)
from unigate.openapi.schema import MULTIPART, Declared, Operation, Schema
from unigate.shapes.declare import Shape, components

log = logging.getLogger("unigate")

VERSION = "1.0.0"  # the version of this API description (info.version)
_FAMILIES = (
    text, moderations, responses, batches, anthropic, gemini, music, audio, images, video, video_vendors,
    jobs, keys, admin, reports, files,
)  # fmt: skip
_TAGS = (
    ("text", "Chat, completions, embeddings, moderations and models in OpenAI's and Anthropic's formats."),
    ("gemini", "The Gemini API's format (v1beta and v1)."),
    ("music", "Music tasks (Suno-style `/suno/*`)."),
    ("audio", "Speech to text and text to speech (OpenAI and Fish Audio formats)."),
    ("image", "Images (OpenAI and Stability formats)."),
    ("video", "Videos (OpenAI-style and unified)."),
    ("files", "Files (OpenAI's Files API): uploads for batches and other uses."),
    ("kling", "Kling's video paths."),
    ("veo", "Veo through the Gemini API's long-running operations."),
    ("vidu", "Vidu's sound-effect and lip-sync tasks."),
    ("picwish", "PicWish's visual and document tools."),
    ("admin", "Keys, usage, providers, models and tasks (admin key)."),
    ("media", "Files the gateway serves (no key)."),
    ("health", "Liveness and readiness (no key)."),
    ("docs", "This description and its viewer (no key)."),
    ("dashboard", "The admin dashboard's page and files (no key; its calls carry the admin key)."),
)
_DESCRIPTION = (
    "unigate is a unified model gateway: one base URL in front of many model providers, each family "
    "in its clients' own format. Every key endpoint takes `Authorization: Bearer <key>`; the other "
    "header forms each family's SDKs send are listed per operation. Errors come in the family's own "
    "shape (OpenAI, Anthropic, Gemini, music envelope, Fish, Stability, Kling, Vidu, PicWish), each "
    "with an `x-request-id` header."
)


def operations() -> dict[tuple[str, str], Operation]:
    """Every documented operation by (method, path), as the endpoint table keys them."""
    found: dict[tuple[str, str], Operation] = {}
    for family in _FAMILIES:
        for op in family.operations():
            if op.key in found:
                raise ValueError(f"{op.method} {op.path} is documented twice")
            found[op.key] = op
    return found


def coverage(endpoints: Iterable[Endpoint]) -> tuple[list[str], list[str]]:
    """(endpoints with no operation, operations with no endpoint), as "METHOD /path"."""
    served = {(ep.method, ep.path) for ep in endpoints}
    documented = set(operations())
    return (
        sorted(f"{m} {p}" for m, p in served - documented),
        sorted(f"{m} {p}" for m, p in documented - served),
    )


def declared_shapes() -> list[Shape[Any]]:
    """Every declaration a documented request body is generated from."""
    return [
        shape
        for op in operations().values()
        if isinstance(op.request, Declared)
        for shape in op.request.content.values()
    ]


def _forms() -> list[Shape[Any]]:
    return [
        shape
        for op in operations().values()
        if isinstance(op.request, Declared)
        for media, shape in op.request.content.items()
        if media == MULTIPART
    ]


def declared_components() -> dict[str, Schema]:
    """The schemas generated from the declarations (request bodies and the Structs in them)."""
    return components(declared_shapes(), _forms())


def _schemas() -> dict[str, Schema]:
    found = edge.error_schemas()
    for name, schema in declared_components().items():
        if name in found:
            raise ValueError(f"schema {name} is defined twice")
        found[name] = schema
    for family in _FAMILIES:
        for name, schema in family.schemas().items():
            if name in found:
                raise ValueError(f"schema {name} is defined twice")
            found[name] = schema
    return found


def _operation(ep: Endpoint, op: Operation) -> dict[str, Any]:
    errors = edge.error_responses(ep, op.error_schema or edge.error_schema(ep), op.request is not None)
    out: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "deprecated": op.deprecated,
    }
    if op.description:
        out["description"] = op.description
    parameters = [*edge.path_parameters(ep, op.path_schemas, op.path_examples), *op.parameters]
    if parameters:
        out["parameters"] = parameters
    if op.request is not None:
        out["requestBody"] = op.request.schema() if isinstance(op.request, Declared) else op.request
    out["responses"] = {**errors, **op.responses}
    if op.links:
        success = next(status for status in op.responses if status.startswith("2"))
        out["responses"][success] = {**op.responses[success], "links": op.links}
    out["security"] = edge.security(ep, op.extra_auth)
    if ep.family:
        out["x-unigate-family"] = ep.family  # the permission family a key must be allowed
    return out


def build(endpoints: Iterable[Endpoint]) -> dict[str, Any]:
    """The document for the endpoints the server routes (in table order)."""
    listed = list(endpoints)
    documented = operations()
    missing, stale = coverage(listed)
    if missing or stale:
        log.warning("openapi: undocumented endpoints %s; operations without an endpoint %s", missing, stale)
    paths: dict[str, dict[str, Any]] = {}
    for ep in listed:
        op = documented.get((ep.method, ep.path))
        if op is not None:
            paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep, op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "unigate",
            "version": VERSION,
            "description": _DESCRIPTION,
        },
        "servers": [{"url": "/"}],
        "tags": [{"name": name, "description": about} for name, about in _TAGS],
        "paths": paths,
        "components": {"schemas": _schemas(), "securitySchemes": edge.security_schemes()},
    }


class OpenAPIDocument:
    """The document as JSON bytes, built on first use and then served from memory: start-up
    and the request path pay nothing for it."""

    def __init__(self, endpoints: Callable[[], Iterable[Endpoint]]) -> None:
        self._endpoints = endpoints
        self._bytes: bytes | None = None

    def json(self) -> bytes:
        if self._bytes is None:
            self._bytes = orjson.dumps(build(self._endpoints()))
        return self._bytes
