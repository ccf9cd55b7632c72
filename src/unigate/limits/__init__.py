"""Per-key and per-model limits: requests and tokens per minute, and money budgets."""
