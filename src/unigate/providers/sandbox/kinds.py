"""The sandbox's job kinds by action (an action ending in `/` matches by prefix)."""

from __future__ import annotations

from unigate.providers.sandbox.tasks import SandboxKind


def sandbox_kinds() -> dict[str, SandboxKind]:
    kinds: dict[str, SandboxKind] = {}
    return kinds
