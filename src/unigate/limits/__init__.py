"""Per-key request limits."""
