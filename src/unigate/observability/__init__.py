"""Operating the gateway: logging (logs.py: text or JSON lines, the access line's direct
write), Prometheus metrics exact across the workers of one serve (metrics.py, values.py,
scrape.py), OpenTelemetry spans (tracing.py, imported only when enabled), request ids
(request_ids.py) and readiness (readiness.py: `GET /readyz`'s probes)."""
