"""OpenTelemetry spans for routed calls and task submits, following the GenAI semantic
conventions, exported over OTLP/HTTP (protobuf) in batches from the SDK's own thread.

Off unless an OTLP endpoint is configured (`Settings.otel_traces_endpoint`): the gateway then
holds no `Tracing` at all, the request path tests one attribute for None, and nothing of
OpenTelemetry is imported (the imports below are inside `__init__`).

A span is built once the call is over, from the times the request path already took
(`time.perf_counter()` at its start, and at the first upstream event for a stream): nothing
is opened, entered or kept while the call runs, so a stream's chunks cost nothing more.
Attributes carry models, provider, token counts, status and error type; never a key, a
prompt or a reply. A client's W3C `traceparent` makes the span a child of the client's trace.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from unigate.extras import require

log = logging.getLogger("unigate.tracing")

# gen_ai.operation.name for the request path's operations (other operations keep their own
# name, e.g. audio.speech).
_OPERATIONS = {"chat": "chat", "completions": "text_completion", "embeddings": "embeddings"}
# gen_ai.provider.name by upstream protocol (the convention's values where it has one).
_PROVIDERS = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
}


def operation_name(op: str) -> str:
    return _OPERATIONS.get(op, op)


def provider_name(protocol: str) -> str:
    return _PROVIDERS.get(protocol, protocol)


class Tracing:
    def __init__(self, endpoint: str, service_name: str) -> None:
        require("otel")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.trace import SpanKind, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        # A provider of the gateway's own, not the SDK's global one (module state).
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        # The batch processor warns once per span it drops when its queue is full (a collector
        # slower than the traffic): thousands of lines a second. One a minute says as much.
        logging.getLogger("opentelemetry.sdk._shared_internal").addFilter(_Throttle(60.0))
        self._tracer = self._provider.get_tracer("unigate")
        self._client = SpanKind.CLIENT
        self._error = StatusCode.ERROR
        self._propagator = TraceContextTextMapPropagator()

    def call(
        self,
        *,
        operation: str,
        model: str,
        protocol: str,
        provider: str,
        upstream_model: str,
        route: str,
        status: int,
        input_tokens: int,
        output_tokens: int,
        started: float,
        first_chunk: float | None = None,
        error: str | None = None,
        request_id: str = "",
        traceparent: bytes | None = None,
    ) -> None:
        """One span for a call that ended now; `started` and `first_chunk` are
        `time.perf_counter()` readings."""
        name = operation_name(operation)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": name,
            "gen_ai.request.model": model,
            "http.response.status_code": status,
        }
        if provider:
            system = provider_name(protocol)
            attributes["gen_ai.provider.name"] = system
            attributes["gen_ai.system"] = system  # the attribute's older name, still read widely
            attributes["gen_ai.response.model"] = upstream_model
            attributes["unigate.provider"] = provider
            attributes["unigate.route"] = route
        if input_tokens or output_tokens:
            attributes["gen_ai.usage.input_tokens"] = input_tokens
            attributes["gen_ai.usage.output_tokens"] = output_tokens
        if first_chunk is not None:
            attributes["gen_ai.request.stream"] = True
            attributes["gen_ai.response.time_to_first_chunk"] = first_chunk - started
        if request_id:
            attributes["unigate.request_id"] = request_id
        self._span(f"{name} {model}", attributes, started, error, traceparent)

    def task_submit(
        self,
        *,
        family: str,
        action: str,
        model: str,
        protocol: str,
        provider: str,
        upstream_model: str,
        status: int,
        started: float,
        error: str | None = None,
    ) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "task.submit",
            "gen_ai.request.model": model,
            "http.response.status_code": status,
            "unigate.task.family": family,
            "unigate.task.action": action,
        }
        if provider:
            attributes["gen_ai.provider.name"] = attributes["gen_ai.system"] = provider_name(protocol)
            attributes["gen_ai.response.model"] = upstream_model
            attributes["unigate.provider"] = provider
        self._span(f"task.submit {model}", attributes, started, error, None)

    def _span(
        self,
        name: str,
        attributes: dict[str, Any],
        started: float,
        error: str | None,
        traceparent: bytes | None,
    ) -> None:
        end_ns = time.time_ns()
        start_ns = end_ns - int((time.perf_counter() - started) * 1e9)
        if error is not None:
            attributes["error.type"] = error
        parent = None
        if traceparent is not None:
            parent = self._propagator.extract({"traceparent": traceparent.decode("latin-1")})
        span = self._tracer.start_span(
            name, context=parent, kind=self._client, attributes=attributes, start_time=start_ns
        )
        if error is not None:
            span.set_status(self._error)
        span.end(end_time=end_ns)

    def shutdown(self) -> None:
        """Export what is still queued (blocking: run it off the event loop)."""
        try:
            self._provider.shutdown()
        except Exception:
            log.exception("tracing: flushing the last spans failed")


class _Throttle(logging.Filter):
    """Lets a repeated message (same format string) through once per `every` seconds."""

    def __init__(self, every: float) -> None:
        super().__init__()
        self._every = every
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        key = str(record.msg)
        if now - self._last.get(key, -self._every) < self._every:
            return False
        self._last[key] = now
        return True
