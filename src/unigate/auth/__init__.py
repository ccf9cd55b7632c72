"""API keys: their format, the in-process cache the hot path reads, and request authentication."""
