"""Helpers for the video families' end-to-end tests: a sandbox config with quick tasks,
decoding MP4s with PyAV, and waiting on a task through any family's fetch."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import av

from unigate.config_source import default_config


def sandbox_config(task_seconds: float = 2.0, **extra: Any) -> dict[str, Any]:
    """The default (sandbox) configuration with quicker sandbox tasks."""
    config = default_config({}).model_dump(mode="json")
    config["sandbox"] = {**config["sandbox"], "task_seconds": task_seconds}
    config.update(extra)
    return config


@dataclass(frozen=True)
class DecodedVideo:
    codec: str
    width: int
    height: int
    seconds: float
    frames: int
    audio_seconds: float  # 0 without an audio track


def decode_video(data: bytes) -> DecodedVideo:
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        rate = float(stream.average_rate or 24)
        audio_seconds = 0.0
        if container.streams.audio:
            audio = container.streams.audio[0]
            if audio.duration is not None and audio.time_base is not None:
                audio_seconds = float(audio.duration * audio.time_base)
        return DecodedVideo(
            stream.codec_context.name, stream.width, stream.height, frames / rate, frames, audio_seconds
        )


def wait_for(
    fetch: Callable[[], dict[str, Any]], done: Callable[[dict[str, Any]], bool], timeout: float = 30.0
) -> dict[str, Any]:
    """Poll `fetch` until `done` says so; the last answer is in the assertion message."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        last = fetch()
        if done(last):
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s; last answer: {last}")
