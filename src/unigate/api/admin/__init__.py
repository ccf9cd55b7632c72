"""The operators' API under /admin/ (keys, usage, reload, providers and tasks), the dashboard,
and /metrics."""
