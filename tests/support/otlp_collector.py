"""An OTLP/HTTP trace collector on 127.0.0.1: receives `POST /v1/traces` (protobuf
ExportTraceServiceRequest, as the OpenTelemetry SDK's exporter sends it), decodes every span
and keeps it with its attributes and resource, for tests to look up."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port


@dataclass
class Span:
    name: str
    kind: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    start_ns: int
    end_ns: int
    status_code: int
    trace_id: str
    parent_span_id: str


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@dataclass
class OTLPCollector(LoopbackServer):
    spans: list[Span] = field(default_factory=list)
    requests: int = 0
    content_types: set[str] = field(default_factory=set)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._init_server()

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT is set to (the exporter appends /v1/traces)."""
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/traces", self._traces)

    async def _traces(self, request: web.Request) -> web.Response:
        body = await request.read()
        export = ExportTraceServiceRequest()
        try:
            export.ParseFromString(body)
        except DecodeError:
            return web.Response(status=400)
        found = []
        for resource_spans in export.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    found.append(
                        Span(
                            s.name,
                            s.kind,
                            {a.key: _value(a.value) for a in s.attributes},
                            resource,
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            s.status.code,
                            s.trace_id.hex(),
                            s.parent_span_id.hex(),
                        )
                    )
        with self._lock:
            self.requests += 1
            self.content_types.add(request.headers.get("Content-Type", ""))
            self.spans.extend(found)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    def wait_for(self, attribute: str, value: Any, timeout: float = 15.0) -> Span:
        """The first span whose `attribute` equals `value`, waiting for the batch to arrive."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for span in self.spans:
                    if span.attributes.get(attribute) == value:
                        return span
            time.sleep(0.05)
        raise AssertionError(f"no span with {attribute}={value!r} within {timeout} s: {self.snapshot()}")

    def snapshot(self) -> list[Span]:
        with self._lock:
            return list(self.spans)
