"""The sandbox's job kinds by action (an action ending in `/` matches by prefix)."""

from __future__ import annotations

from unigate.providers.sandbox.tasks import SandboxKind
from unigate.providers.sandbox.video_kinds import VideoKind


def sandbox_kinds() -> dict[str, SandboxKind]:
    kinds: dict[str, SandboxKind] = {}
    video = VideoKind()
    kinds.update({"text2video": video, "image2video": video, "remix": video})
    return kinds
