"""Every path family's task shape, by the family name stored with each task."""

from __future__ import annotations

from unigate.music.record import music_record
from unigate.tasks.service import TaskShape, music_envelope


def task_shapes() -> dict[str, TaskShape]:
    return {
        "music": TaskShape(music_record, music_envelope),
    }
