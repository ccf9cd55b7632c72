"""Every path family's task shape, by the family name stored with each task."""

from __future__ import annotations

from unigate.music.record import music_record
from unigate.records.kling import kling_task
from unigate.records.picwish import picwish_envelope, picwish_task
from unigate.records.veo import veo_operation
from unigate.records.video import openai_video, plain, unified_video
from unigate.records.vidu import vidu_task
from unigate.tasks.service import TaskShape, music_envelope


def task_shapes() -> dict[str, TaskShape]:
    return {
        "music": TaskShape(music_record, music_envelope),
        "openai-video": TaskShape(openai_video, plain),
        "video": TaskShape(unified_video, plain),
        "kling": TaskShape(kling_task, plain),
        "veo": TaskShape(veo_operation, plain),
        "vidu": TaskShape(vidu_task, plain),
        "picwish": TaskShape(picwish_task, picwish_envelope),
    }
