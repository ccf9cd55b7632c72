"""Anthropic upstreams: the Messages API (messages.py)."""
