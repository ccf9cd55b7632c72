"""Operating the gateway: Prometheus metrics exact across the workers of one serve
(metrics.py, values.py, scrape.py), OpenTelemetry spans (tracing.py, imported only when
enabled) and request ids (request_ids.py). JSON log lines are logs.py's."""
