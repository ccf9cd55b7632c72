"""The canonical video job from each family's request format, and the records each family
renders from a task (status cross-walk, times, links, errors)."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from unigate.errors import InvalidRequest
from unigate.records.kling import kling_task
from unigate.records.outputs import output_link
from unigate.records.veo import file_name, parse_file_name, veo_operation
from unigate.records.video import openai_video, unified_video
from unigate.tasks.model import Task
from unigate.video.job import video_seconds, video_size
from unigate.video.validate import from_kling, from_openai, from_unified, from_veo


def _task(status: str = "SUCCESS", **over: Any) -> Task:
    now = time.time()
    values: dict[str, Any] = dict(
        id="0b6f2c1e-8a8f-4c55-9d42-0f1b2c3d4e5f", key_id="key_1", family="video", action="text2video",
        model="sora-2", provider="sandbox", upstream_id="up-1", status=status, progress=100 if status in (
            "SUCCESS", "FAILURE") else 40, fail_reason="", submit_time=int(now), start_time=int(now),
        finish_time=int(now) if status in ("SUCCESS", "FAILURE") else 0, notify_hook="",
        request={"prompt": "a kite", "seconds": 4.0, "width": 720, "height": 1280, "size": "720x1280"},
        result={}, public_base="http://gw.test", price=0.0, created_at=now, updated_at=now,
    )  # fmt: skip
    values.update(over)
    return Task(**values)


def test_openai_video_object_follows_the_status_crosswalk() -> None:
    for status, shown in (("SUBMITTED", "queued"), ("QUEUED", "queued"), ("IN_PROGRESS", "in_progress"),
                          ("SUCCESS", "completed"), ("FAILURE", "failed")):  # fmt: skip
        record = openai_video(_task(status))
        assert record["status"] == shown
        assert record["object"] == "video" and record["seconds"] == "4" and record["size"] == "720x1280"
    done = openai_video(_task("SUCCESS"))
    assert done["expires_at"] == done["completed_at"] + 24 * 3600 and done["error"] is None
    failed = openai_video(_task("FAILURE", fail_reason="no", result={"error_type": "upstream_error"}))
    assert failed["error"] == {"code": "upstream_error", "message": "no"} and failed["expires_at"] is None


def test_output_links_local_public_and_private() -> None:
    outputs = [
        {"url": "/media/a.mp4", "thumbnail_url": "/media/a-thumb.webp"},
        {"url": "https://cdn.example/v.mp4"},
        {"url": "", "private": True},
    ]
    task = _task(result={"outputs": outputs})
    assert output_link(task, 0) == "http://gw.test/media/a.mp4"
    assert output_link(task, 0, "thumbnail") == "http://gw.test/media/a-thumb.webp"
    assert output_link(task, 1) == "https://cdn.example/v.mp4"
    assert output_link(task, 2) == f"http://gw.test/media/tasks/{task.id}/2/video"
    assert output_link(task, 3) == ""
    unified = unified_video(task)
    assert unified["url"] == "http://gw.test/media/a.mp4" and unified["task_id"] == unified["id"]
    assert unified_video(_task("IN_PROGRESS"))["url"] is None


def test_kling_task_in_milliseconds_with_videos_once_done() -> None:
    task = _task(
        result={"outputs": [{"url": "/media/k.mp4", "duration": 5.0, "id": "v1"}]}, external_id="ext"
    )
    data = kling_task(task)
    assert data["task_status"] == "succeed" and data["task_info"] == {"external_task_id": "ext"}
    assert data["created_at"] == int(task.created_at * 1000)
    assert data["task_result"]["videos"] == [
        {"id": "v1", "url": "http://gw.test/media/k.mp4", "duration": "5"}
    ]
    assert "task_result" not in kling_task(_task("IN_PROGRESS"))
    assert kling_task(_task("QUEUED"))["task_status"] == "submitted"


def test_veo_operation_and_file_names_round_trip() -> None:
    task = _task(result={"outputs": [{"url": "/media/v.mp4"}]}, model="veo-3.0-generate-001")
    op = veo_operation(task)
    assert op["name"] == f"models/veo-3.0-generate-001/operations/{task.id}" and op["done"] is True
    [sample] = op["response"]["generateVideoResponse"]["generatedSamples"]
    name = file_name(task.id, 0)
    assert sample["video"]["uri"] == f"http://gw.test/v1beta/files/{name}:download?alt=media"
    assert name.isalnum() and name.islower()
    assert parse_file_name(name) == (task.id, 0)
    assert parse_file_name("nothex" + "0" * 26 + "v0") is None and parse_file_name("abc") is None
    assert "done" not in veo_operation(_task("IN_PROGRESS"))
    assert "error" in veo_operation(_task("FAILURE", fail_reason="filtered"))


def test_openai_requests_become_canonical_jobs() -> None:
    job = from_openai({"prompt": "p", "seconds": "8", "size": "1280x720"}, None, "sora-2")
    assert (job.model, job.action) == ("sora-2", "text2video")
    assert job.fields["seconds"] == 8.0 and (job.fields["width"], job.fields["height"]) == (1280, 720)
    assert job.fields["native_format"] == "openai"
    ref = from_openai({"prompt": "p", "input_reference": {"image_url": "https://x/y.png"}}, None, "sora-2")
    assert ref.action == "image2video" and ref.fields["image"] == "https://x/y.png"
    for bad in ({"seconds": "4"}, {"prompt": "p", "seconds": "0"}, {"prompt": "p", "size": "10x10"}):
        with pytest.raises(InvalidRequest):
            from_openai(bad, None, "sora-2")


def test_unified_kling_and_veo_requests() -> None:
    unified = from_unified({"model": "m", "prompt": "p", "duration": 3, "width": 640, "height": 360,
                            "metadata": {"aspect_ratio": "16:9", "mode": "pro"}})  # fmt: skip
    assert unified.fields["metadata"] == {"aspect_ratio": "16:9", "mode": "pro"}
    assert video_size(unified.fields) == (640, 360) and video_seconds(unified.fields) == 3.0
    kling = from_kling(
        {"prompt": "p", "duration": "10", "external_task_id": "e1", "callback_url": "x"}, "text2video"
    )
    assert kling.model == "kling-v1" and kling.fields["seconds"] == 10.0
    assert "callback_url" not in kling.fields["native"] and video_size(kling.fields) == (1280, 720)
    with pytest.raises(InvalidRequest):
        from_kling({"prompt": "p"}, "image2video")
    image = base64.b64encode(b"png").decode()
    instance = {"prompt": "p", "image": {"bytesBase64Encoded": image, "mimeType": "image/png"}}
    body = {"instances": [instance], "parameters": {"aspectRatio": "9:16", "durationSeconds": 6}}
    veo = from_veo(body, "veo-2")
    assert veo.action == "image2video" and veo.fields["image"] == f"data:image/png;base64,{image}"
    assert (veo.fields["width"], veo.fields["height"]) == (720, 1280) and veo.fields["seconds"] == 6.0
    with pytest.raises(InvalidRequest):
        from_veo({"instances": [{}]}, "veo-2")
