"""The sandbox's job kinds by action (an action ending in `/` matches by prefix)."""

from __future__ import annotations

from unigate.providers.sandbox.audio_kinds import LipSyncKind, SoundEffectKind
from unigate.providers.sandbox.tasks import SandboxKind
from unigate.providers.sandbox.video_kinds import VideoKind
from unigate.providers.sandbox.visual_kinds import DocumentKind, VisualKind


def sandbox_kinds() -> dict[str, SandboxKind]:
    kinds: dict[str, SandboxKind] = {}
    video = VideoKind()
    kinds.update({"text2video": video, "image2video": video, "remix": video})
    kinds.update({"text2audio": SoundEffectKind(), "lip-sync": LipSyncKind()})
    kinds.update({"visual/": VisualKind(), "document/": DocumentKind()})
    return kinds
