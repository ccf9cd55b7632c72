"""Lip-sync for the sandbox: a video's frames with a mouth that opens and closes with an audio track.

The picture is the uploaded video, looped when shorter than the audio and cut when longer;
a simple mouth (dark lips around a lighter inside) is drawn at the lower centre, opened in
proportion to the audio's loudness during each frame. The sound track is the uploaded audio
(anything FFmpeg decodes) re-encoded as AAC, so the result lasts as long as the audio.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from fractions import Fraction
from operator import mul

import av
from PIL import ImageDraw

from unigate_sandbox.media.encode import _encoder_rate
from unigate_sandbox.media.mp4 import (
    Mp4Writer,
    Planes,
    VideoInvalid,
    open_input,
    planes_of,
    video_stream,
    ycc,
)
from unigate_sandbox.media.video import MAX_SIDE, video_thumbnail

__all__ = ["MAX_AUDIO_SECONDS", "lip_sync", "video_thumbnail"]  # a lip-synced video's cover is a thumbnail

MAX_AUDIO_SECONDS = 60.0
_METER_RATE = 8_000  # loudness is measured on a mono 8 kHz copy: plenty, and cheap
_LIPS = ycc((92, 26, 38))
_INSIDE = ycc((222, 128, 134))


@dataclass(frozen=True)
class _Audio:
    pcm: bytes  # s16, interleaved
    rate: int
    channels: int
    meter: array[int]  # mono s16 at _METER_RATE

    @property
    def seconds(self) -> float:
        return len(self.pcm) / (2 * self.channels * self.rate)


def _samples(frame: av.AudioFrame, channels: int) -> bytes:
    """The s16 interleaved samples of a resampled frame (its plane may carry padding)."""
    return bytes(frame.planes[0])[: 2 * channels * frame.samples]


def _decode_audio(data: bytes) -> _Audio:
    with open_input(data, "audio") as container:
        if not container.streams.audio:
            raise VideoInvalid("the audio file contains no audio")
        stream = container.streams.audio[0]
        channels = 1 if stream.codec_context.channels == 1 else 2  # more than two: mixed down to stereo
        rate = _encoder_rate("aac", stream.codec_context.sample_rate or 48_000)
        resampler = av.AudioResampler(format="s16", layout="mono" if channels == 1 else "stereo", rate=rate)
        meter = av.AudioResampler(format="s16", layout="mono", rate=_METER_RATE)
        pcm, levels = bytearray(), array("h")
        limit = 2 * channels * rate * MAX_AUDIO_SECONDS

        def add(pieces: list[av.AudioFrame]) -> None:
            for piece in pieces:  # the meter reads the converted audio: one layout, one rate
                pcm.extend(_samples(piece, channels))
                for level in meter.resample(piece):
                    levels.frombytes(_samples(level, 1))

        try:
            for frame in container.decode(stream):
                add(resampler.resample(frame))
                if len(pcm) > limit:
                    raise VideoInvalid(f"the audio is longer than {MAX_AUDIO_SECONDS:g} seconds")
        except VideoInvalid:
            raise
        except (av.FFmpegError, ValueError) as exc:  # a file that turns corrupt keeps what decoded
            if not pcm:
                raise VideoInvalid("the audio could not be decoded") from exc
        add(resampler.resample(None))
        for level in meter.resample(None):
            levels.frombytes(_samples(level, 1))
    if not pcm:
        raise VideoInvalid("the audio is empty")
    return _Audio(bytes(pcm), rate, channels, levels)


def _openings(meter: array[int], frames: int, fps: Fraction) -> list[float]:
    """How open the mouth is in each frame, 0..1: the frame's RMS against the loudest frame's."""
    levels = []
    for index in range(frames):
        window = meter[round(index * _METER_RATE / fps) : round((index + 1) * _METER_RATE / fps)][::2]
        levels.append(math.sqrt(sum(map(mul, window, window)) / len(window)) if window else 0.0)
    loudest = max(levels, default=0.0)
    if loudest < 100:  # digital silence (or nearly): the mouth stays shut
        return [0.0] * frames
    return [min(1.0, level / (0.8 * loudest)) for level in levels]


def _looped(data: bytes) -> Generator[av.VideoFrame, None, None]:
    """The video's frames in order, starting over at the end, forever."""
    while True:
        produced = 0
        with open_input(data) as container:
            stream = video_stream(container)
            try:
                for frame in container.decode(stream):
                    produced += 1
                    yield frame
            except (av.FFmpegError, ValueError) as exc:  # a video that turns corrupt loops what decoded
                if not produced:
                    raise VideoInvalid("the video could not be decoded") from exc
        if not produced:
            raise VideoInvalid("the video could not be decoded")


def _geometry(data: bytes, fps: int | None) -> tuple[int, int, Fraction, Fraction]:
    """(width, height, input fps, output fps): the input's size scaled to fit, sides even."""
    if fps is not None and (not 1 <= fps <= 60 or fps != int(fps)):
        raise VideoInvalid("fps must be a whole number between 1 and 60")
    with open_input(data) as container:
        stream = video_stream(container)
        width, height = stream.codec_context.width, stream.codec_context.height
        rate = Fraction(stream.average_rate or stream.guessed_rate or 25)
    if width < 16 or height < 16:
        raise VideoInvalid("the video is too small (or its size is unknown)")
    scale = min(1.0, MAX_SIDE / max(width, height))
    if not 0 < rate <= 240:  # a broken header: assume the most common rate
        rate = Fraction(25)
    out_fps = Fraction(int(fps)) if fps is not None else min(rate, Fraction(60))
    return round(width * scale) & ~1, round(height * scale) & ~1, rate, out_fps


def _draw_mouth(planes: Planes, opening: float) -> None:
    """Dark lips around a lighter inside, at the lower centre, `opening` (0..1) wide open."""
    width, height = planes.y.size
    mouth = 0.3 * min(width, height)
    lips = max(2.0, 0.07 * mouth)
    tall = mouth * (0.12 + 0.5 * opening)
    cx, cy = width / 2, height * 0.8
    for plane, lip, inside, k in zip(planes, _LIPS, _INSIDE, (1, 2, 2), strict=True):
        draw = ImageDraw.Draw(plane)
        draw.ellipse(
            ((cx - mouth / 2) / k, (cy - tall / 2) / k, (cx + mouth / 2) / k, (cy + tall / 2) / k), lip
        )
        if tall - 2 * lips >= 2:  # a closed mouth is just the lips
            inner = ((cx - mouth / 2 + lips) / k, (cy - tall / 2 + lips) / k)
            draw.ellipse((*inner, (cx + mouth / 2 - lips) / k, (cy + tall / 2 - lips) / k), inside)


def lip_sync(video: bytes, audio: bytes, *, fps: int | None = None) -> bytes:
    """An MP4 of `video`'s frames with a mouth following `audio`, whose AAC track is `audio`.

    Lasts as long as the audio (to the nearest frame), at the video's frame rate unless `fps`
    is given; the video loops or is cut to fit. Raises `VideoInvalid` for undecodable video or
    audio, audio over a minute long, or a bad `fps`.
    """
    width, height, source_fps, out_fps = _geometry(video, fps)
    sound = _decode_audio(audio)
    frames = max(1, round(sound.seconds * out_fps))
    openings = _openings(sound.meter, frames, out_fps)
    # Where each frame's share of the audio starts and ends (the last frame takes the rest).
    step = 2 * sound.channels
    cuts = [round(index / out_fps * sound.rate) * step for index in range(frames)] + [len(sound.pcm)]
    with (
        Mp4Writer(width, height, out_fps, sound.rate, sound.channels) as writer,
        closing(_looped(video)) as source,
    ):
        position = -1  # index of `current` among the looped source frames
        current: av.VideoFrame | None = None
        for index in range(frames):
            wanted = math.floor(index * source_fps / out_fps)  # the source frame shown at this time
            while position < wanted or current is None:
                current = next(source)
                position += 1
            planes = planes_of(current, width, height)
            _draw_mouth(planes, openings[index])
            writer.add_frame(planes)
            writer.add_audio(sound.pcm[cuts[index] : cuts[index + 1]])
        return writer.finish()
