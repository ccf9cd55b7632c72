"""The sandbox's job kinds by action (an action ending in `/` matches by prefix)."""

from __future__ import annotations

from unigate_sandbox.audio_kinds import LipSyncKind, SoundEffectKind
from unigate_sandbox.tasks import SandboxKind
from unigate_sandbox.video_kinds import VideoKind
from unigate_sandbox.visual_kinds import DocumentKind, VisualKind


def sandbox_kinds() -> dict[str, SandboxKind]:
    kinds: dict[str, SandboxKind] = {}
    video = VideoKind()
    kinds.update({"text2video": video, "image2video": video, "remix": video})
    kinds.update({"text2audio": SoundEffectKind(), "lip-sync": LipSyncKind()})
    kinds.update({"visual/": VisualKind(), "document/": DocumentKind()})
    return kinds
