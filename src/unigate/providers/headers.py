"""The headers every request to an upstream carries, merged one way for every adapter."""

from __future__ import annotations

from collections.abc import Mapping


def upstream_headers(
    defaults: Mapping[str, str], configured: Mapping[str, str], credentials: Mapping[str, str]
) -> dict[str, str]:
    """`defaults` (e.g. Content-Type), then the provider's configured `headers`, then its
    credentials: later ones win, names compared case-insensitively (so `authorization` in the
    config cannot ride along beside the real `Authorization`, and never replaces the key)."""
    merged: dict[str, str] = {}
    for layer in (defaults, configured, credentials):
        for name, value in layer.items():
            for existing in [k for k in merged if k.lower() == name.lower()]:
                del merged[existing]
            merged[name] = value
    return merged
