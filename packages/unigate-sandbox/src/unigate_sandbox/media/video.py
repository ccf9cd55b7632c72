"""Generate and inspect MP4 videos for the sandbox video endpoints (PyAV + Pillow).

A generated video is real H.264: a gradient in a palette hashed from the prompt (or a given
start image, slowly zooming and panning), a few shapes moving smoothly over it, the prompt's
start as a caption and a small timecode. Frames are drawn straight into Y/Cb/Cr planes and
encoded by `Mp4Writer` (see `mp4`), so the same request gives the same bytes. Uploaded
videos (probed, thumbnailed) are opened from memory with plain demuxers only.
"""

from __future__ import annotations

import hashlib
import io
import math
import random
from array import array
from dataclasses import dataclass
from itertools import repeat
from operator import add, mul
from typing import NamedTuple

import av
from PIL import Image, ImageDraw, ImageFont, ImageOps

from unigate_sandbox.media.images import ImageInvalid, _draw_caption, _font, _open, _palette
from unigate_sandbox.media.mp4 import (
    Mp4Writer,
    Planes,
    VideoInvalid,
    faststart,
    frame_of,
    open_input,
    planes_of,
    to_planes,
    video_stream,
    ycc,
)
from unigate_sandbox.media.speech import _to_le

__all__ = [
    "AUDIO_RATE",
    "MAX_SECONDS",
    "MAX_SIDE",
    "MIN_SIDE",
    "VideoInfo",
    "VideoInvalid",
    "check_video_args",
    "faststart",
    "probe_video",
    "render_video",
    "video_spritesheet",
    "video_thumbnail",
]

MIN_SIDE, MAX_SIDE = 64, 1920
MAX_SECONDS = 20.0
AUDIO_RATE = 48_000  # the usual rate of a video's sound track
_INTRO_SECONDS = 0.5  # over a start image, shapes and caption fade in: the first frame is the image


Box = tuple[int, int, int, int]  # left, top, right, bottom


@dataclass(frozen=True)
class VideoInfo:
    width: int
    height: int
    seconds: float
    fps: float
    frames: int
    has_audio: bool
    audio_seconds: float


def check_video_args(width: int, height: int, seconds: float, fps: int) -> int:
    """Validate render arguments; the number of frames to render."""
    for name, side in (("width", width), ("height", height)):
        if not MIN_SIDE <= side <= MAX_SIDE or side % 2:
            raise VideoInvalid(f"{name} must be an even number of pixels between {MIN_SIDE} and {MAX_SIDE}")
    if not 0 < seconds <= MAX_SECONDS:  # also refuses NaN
        raise VideoInvalid(f"seconds must be more than 0 and at most {MAX_SECONDS:g}")
    if not 1 <= fps <= 60 or fps != int(fps):
        raise VideoInvalid("fps must be a whole number between 1 and 60")
    return max(1, round(seconds * fps))


@dataclass(frozen=True)
class _Shape:
    color: tuple[int, int, int]  # Y, Cb, Cr
    round: bool  # ellipse, else rounded square
    radius: float  # fraction of the short side
    centre: tuple[float, float]  # fractions of width and height
    swing: tuple[float, float]
    period: float  # seconds per orbit
    phase: float

    def draw(self, planes: Planes, t: float, scale: float) -> None:
        width, height = planes.y.size
        angle = 2 * math.pi * t / self.period + self.phase
        x = (self.centre[0] + self.swing[0] * math.sin(angle)) * width
        y = (self.centre[1] + self.swing[1] * math.sin(2 * angle + self.phase)) * height  # a figure eight
        r = self.radius * min(width, height) * scale * (1 + 0.15 * math.sin(3 * angle))
        for plane, value, k in zip(planes, self.color, (1, 2, 2), strict=True):
            box = ((x - r) / k, (y - r) / k, (x + r) / k, (y + r) / k)
            if self.round:
                ImageDraw.Draw(plane).ellipse(box, fill=value)
            else:
                ImageDraw.Draw(plane).rounded_rectangle(box, radius=0.3 * r / k, fill=value)


def _shapes(rng: random.Random, colors: list[tuple[int, int, int]], small: bool) -> list[_Shape]:
    count = 3 if small else rng.randint(3, 5)
    low, high = (0.04, 0.08) if small else (0.07, 0.15)
    return [
        _Shape(
            color=ycc(colors[(index + 1) % len(colors)]),
            round=rng.random() < 0.6,
            radius=rng.uniform(low, high),
            centre=(rng.uniform(0.3, 0.7), rng.uniform(0.3, 0.7)),
            swing=(rng.uniform(0.1, 0.2), rng.uniform(0.1, 0.2)),
            period=rng.uniform(2.5, 6.0) * rng.choice((-1, 1)),
            phase=rng.uniform(0, 2 * math.pi),
        )
        for index in range(count)
    ]


class _Overlay(NamedTuple):
    """The caption as small planes with alpha masks, pasted on every frame at `at` (even)."""

    planes: Planes
    masks: tuple[Image.Image, Image.Image]
    at: tuple[int, int]

    def paste(self, frame: Planes, fade: float) -> None:
        masks = self.masks if fade >= 1 else tuple(m.point(lambda v: round(v * fade)) for m in self.masks)
        frame.y.paste(self.planes.y, self.at, masks[0])
        half = (self.at[0] // 2, self.at[1] // 2)
        frame.cb.paste(self.planes.cb, half, masks[1])
        frame.cr.paste(self.planes.cr, half, masks[1])


def _caption(prompt: str, size: tuple[int, int]) -> _Overlay | None:
    canvas = Image.new("RGBA", size, (0, 0, 0, 0))
    _draw_caption(canvas, prompt, top=False)
    box = canvas.getbbox()
    if box is None:
        return None
    left, top, right, bottom = (int(side) for side in box)
    box = (left & ~1, top & ~1, min(size[0], right + 1) & ~1, min(size[1], bottom + 1) & ~1)
    sprite = canvas.crop(box)
    alpha = sprite.getchannel("A")
    return _Overlay(to_planes(sprite), (alpha, alpha.reduce(2)), (box[0], box[1]))


class _Timecode(NamedTuple):
    """A small "00:01.25" in a dark box at the top right (font and layout measured once)."""

    font: ImageFont.ImageFont | ImageFont.FreeTypeFont
    box: tuple[int, int, int, int]  # even corners, so the chroma box lines up
    origin: tuple[int, int]

    @classmethod
    def fit(cls, width: int, height: int) -> _Timecode:
        size = max(10, min(width, height) // 36)
        font = _font(size)
        left, top, right, bottom = (round(side) for side in font.getbbox("00:00.00"))
        margin = size // 2
        x0, y0 = (width - margin - (right - left) - size // 2) & ~1, margin & ~1
        x1, y1 = (width - margin) & ~1, (y0 + bottom - top + size // 2 + 1) & ~1
        return cls(font, (x0, y0, x1, y1), (x0 + size // 4 - left, y0 + size // 4 - top))

    def draw(self, planes: Planes, t: float) -> None:
        x0, y0, x1, y1 = self.box
        ImageDraw.Draw(planes.y).rectangle((x0, y0, x1 - 1, y1 - 1), fill=28)
        for plane in planes[1:]:
            ImageDraw.Draw(plane).rectangle((x0 // 2, y0 // 2, x1 // 2 - 1, y1 // 2 - 1), fill=128)
        text = f"{int(t) // 60:02d}:{t % 60:05.2f}"
        ImageDraw.Draw(planes.y).text(self.origin, text, font=self.font, fill=230)


def _background(digest: bytes, size: tuple[int, int], start_image: bytes | None) -> Planes:
    if start_image is not None:
        try:
            image = _open(start_image, "start image")
        except ImageInvalid as exc:
            raise VideoInvalid(str(exc)) from exc
        return to_planes(ImageOps.fit(image.convert("RGB"), size, Image.Resampling.LANCZOS))
    colors = _palette(digest, None)
    ramp = Image.radial_gradient("L") if digest[6] % 3 == 2 else Image.linear_gradient("L")
    if digest[6] % 3 == 1:
        ramp = ramp.transpose(Image.Transpose.ROTATE_90)
    ramp = ramp.resize(size, Image.Resampling.BILINEAR)
    return to_planes(
        Image.composite(Image.new("RGB", size, colors[3]), Image.new("RGB", size, colors[0]), ramp)
    )


def _zoom_box(size: tuple[int, int], progress: float, direction: tuple[float, float]) -> Box:
    """The part of the start image on screen: zoomed in by up to 12%, drifting towards `direction`.

    Corners are even (chroma is half size), so the box moves in steps of two pixels.
    """
    width, height = size
    zoom = 1 + 0.12 * progress * progress * (3 - 2 * progress)  # smoothstep: starts and ends gently
    crop_w, crop_h = round(width / zoom / 2) * 2, round(height / zoom / 2) * 2
    x = int((width - crop_w) / 2 * (1 + direction[0])) & ~1
    y = int((height - crop_h) / 2 * (1 + direction[1])) & ~1
    return x, y, x + crop_w, y + crop_h


def _zoomed(planes: Planes, box: Box) -> Planes:
    """`box` of the planes scaled up to their full size by swscale (a tenth of Pillow's time)."""
    size = planes.y.size
    if box == (0, 0, *size):
        return planes.copy()
    half = (box[0] // 2, box[1] // 2, box[2] // 2, box[3] // 2)
    crop = Planes(planes.y.crop(box), planes.cb.crop(half), planes.cr.crop(half))
    return planes_of(frame_of(crop), *size)


def _tone_pattern(digest: bytes, count: int, rate: int) -> bytes:
    """A soft pentatonic arpeggio, a note every half second: s16le mono PCM of `count` samples."""
    note = rate // 2
    attack = 0.02 * rate
    # A quick attack, then a fade to silence at the note's end: no clicks between notes.
    envelope = [5_000 * min(1.0, k / attack) * (1 - k / note) ** 2 for k in range(note)]
    root = 220 * 2 ** ((digest[8] % 12) / 12)
    notes: dict[int, bytes] = {}
    pieces: list[bytes] = []
    for index in range(-(-count // note)):
        step = (0, 2, 4, 7, 9, 12)[digest[9 + index % 23] % 6]  # a 23-note phrase, repeated
        if step not in notes:  # each pitch is rendered once, with whole-list passes (C loops)
            w = 2 * math.pi * root * 2 ** (step / 12) / rate
            fundamental = map(math.sin, map(mul, range(note), repeat(w)))
            octave = map(mul, map(math.sin, map(mul, range(note), repeat(2 * w))), repeat(0.25))
            notes[step] = _to_le(array("h", map(int, map(mul, map(add, fundamental, octave), envelope))))
        pieces.append(notes[step])
    return b"".join(pieces)[: 2 * count]


def render_video(
    prompt: str,
    width: int,
    height: int,
    seconds: float,
    *,
    fps: int = 24,
    seed: int = 0,
    start_image: bytes | None = None,
    audio: bool = False,
) -> bytes:
    """A deterministic MP4 for `prompt` (+ `seed`): H.264 yuv420p, round(seconds * fps) frames.

    With `start_image` (PNG/JPEG/WebP) the first frame is that image, scaled to cover the
    frame, and the picture then slowly zooms and pans under the moving shapes. `audio` adds
    an AAC track (a soft tone pattern) as long as the video. Raises `VideoInvalid` for bad
    arguments or an undecodable start image.
    """
    frames = check_video_args(width, height, seconds, fps)
    fps = int(fps)  # 24.0 is fine too
    digest = hashlib.sha256(f"{seed}\x1f{prompt}".encode()).digest()
    rng = random.Random(int.from_bytes(digest, "big"))
    size = (width, height)
    background = _background(digest, size, start_image)
    shapes = _shapes(rng, _palette(digest, "vivid"), small=start_image is not None)
    caption = _caption(prompt, size)
    direction = (rng.uniform(-1, 1), rng.uniform(-1, 1))
    timecode = _Timecode.fit(width, height)
    # The start image's box last scaled, and the result: the box only moves every few frames.
    shown: tuple[Box, Planes] = ((0, 0, width, height), background)
    total = round(frames / fps * AUDIO_RATE)
    pcm = _tone_pattern(digest, total, AUDIO_RATE) if audio else b""
    with Mp4Writer(width, height, fps, AUDIO_RATE if audio else 0) as writer:
        for index in range(frames):
            t = index / fps
            if start_image is None:
                picture, fade = background.copy(), 1.0
            else:
                box = _zoom_box(size, index / max(1, frames - 1), direction)
                if box != shown[0]:
                    shown = (box, _zoomed(background, box))
                picture, fade = shown[1].copy(), min(1.0, t / _INTRO_SECONDS)
            if fade > 0:
                for shape in shapes:
                    shape.draw(picture, t, fade)
                if caption is not None:
                    caption.paste(picture, fade)
            timecode.draw(picture, t)
            writer.add_frame(picture)
            # Audio up to the end of this frame, so the tracks interleave by time.
            writer.add_audio(pcm[2 * round(t * AUDIO_RATE) : 2 * round((index + 1) / fps * AUDIO_RATE)])
        return writer.finish()


def probe_video(data: bytes) -> VideoInfo:
    """Describe a video: size, duration, frame rate, frame count (packets) and its audio track.

    The first video frame is decoded (so the video is known to be decodable) and the audio
    is decoded in full, its duration being the decoded samples. Raises `VideoInvalid`.
    """
    with open_input(data) as container:
        video = video_stream(container)
        audio = container.streams.audio[0] if container.streams.audio else None
        first: av.VideoFrame | None = None
        frames = audio_samples = 0
        start, end = math.inf, -math.inf
        try:
            for packet in container.demux(*(s for s in (video, audio) if s is not None)):
                if audio is not None and packet.stream is audio:
                    audio_samples += sum(frame.samples for frame in audio.decode(packet))
                    continue
                if packet.size and packet.pts is not None:  # not the demuxer's final empty packet
                    frames += 1
                    start = min(start, float(packet.pts * packet.time_base))
                    end = max(end, float((packet.pts + (packet.duration or 0)) * packet.time_base))
                if first is None:  # the decoder may hold a few packets before its first frame
                    first = next(iter(video.decode(packet)), None)
        except (av.FFmpegError, ValueError) as exc:
            if first is None:
                raise VideoInvalid("the video could not be decoded") from exc
        if first is None or not frames:
            raise VideoInvalid("the video could not be decoded")
        rate = video.average_rate or video.guessed_rate
        seconds = max(0.0, end - start)
        fps = float(rate) if rate else frames / max(seconds, 1e-9)
        audio_rate = audio.rate if audio is not None and audio.rate else 1
        return VideoInfo(
            width=first.width,
            height=first.height,
            seconds=seconds or frames / fps,
            fps=fps,
            frames=frames,
            has_audio=audio is not None,
            audio_seconds=audio_samples / audio_rate,
        )


def _rgb(frame: av.VideoFrame, width: int, height: int) -> Image.Image:
    """A frame as an RGB picture of `width` x `height` (scaled by swscale, averaging areas)."""
    plane = frame.reformat(width=width, height=height, format="rgb24", interpolation="AREA").planes[0]
    return Image.frombuffer("RGB", (width, height), bytes(plane), "raw", "RGB", plane.line_size, 1)


def _pictures(data: bytes, wanted: list[int], size: tuple[int, int]) -> list[Image.Image]:
    """Pictures of `size` from the frames at the ascending indices `wanted` (past the end: the last)."""
    pictures: list[Image.Image] = []
    last: av.VideoFrame | None = None
    with open_input(data) as container:
        stream = video_stream(container)
        try:
            for index, frame in enumerate(container.decode(stream)):
                last = frame
                while len(pictures) < len(wanted) and wanted[len(pictures)] <= index:
                    pictures.append(_rgb(frame, *size))  # converted at once: frames are large
                if len(pictures) == len(wanted):
                    break
        except (av.FFmpegError, ValueError) as exc:  # a video that turns corrupt keeps what decoded
            if last is None:
                raise VideoInvalid("the video could not be decoded") from exc
    if last is None:
        raise VideoInvalid("the video could not be decoded")
    return pictures + [_rgb(last, *size)] * (len(wanted) - len(pictures))


def video_thumbnail(video: bytes, fmt: str = "webp") -> bytes:
    """The frame from the middle of the video, at its size, as WebP, JPEG or PNG."""
    if fmt not in ("webp", "jpeg", "png"):
        raise VideoInvalid(f"unsupported thumbnail format {fmt!r}; expected webp, jpeg or png")
    info = probe_video(video)
    (picture,) = _pictures(video, [info.frames // 2], (info.width, info.height))
    out = io.BytesIO()
    picture.save(out, fmt.upper(), quality=85)
    return out.getvalue()


def video_spritesheet(video: bytes, columns: int = 5, rows: int = 5, tile_width: int = 160) -> bytes:
    """A JPEG grid of columns x rows evenly spaced frames, row by row; tiles keep the aspect ratio."""
    if not (1 <= columns <= 20 and 1 <= rows <= 20):
        raise VideoInvalid("columns and rows must be between 1 and 20")
    if not 16 <= tile_width <= 640:
        raise VideoInvalid("tile_width must be between 16 and 640 pixels")
    info = probe_video(video)
    count = columns * rows
    tile_height = max(1, round(tile_width * info.height / info.width))
    wanted = [int((k + 0.5) * info.frames / count) for k in range(count)]  # the middle of each slice
    sheet = Image.new("RGB", (columns * tile_width, rows * tile_height))
    for k, tile in enumerate(_pictures(video, wanted, (tile_width, tile_height))):
        sheet.paste(tile, ((k % columns) * tile_width, (k // columns) * tile_height))
    out = io.BytesIO()
    sheet.save(out, "JPEG", quality=85)
    return out.getvalue()
