"""Small, real result files for the fake task upstreams (fake_kling, fake_vidu, fake_picwish,
fake_openai_videos, fake_veo), made once per process and cached:

  mp4(audio=True)     1 s of 160x96 H.264 (yuv420p, 12 fps) in MP4, with a 1 s AAC-LC mono track
                      (24 kHz) unless `audio=False`
  png()               64x64 RGBA PNG (a cut-out: transparent border round an opaque square)
  mask_png()          64x64 greyscale PNG mask (white square on black)
  jpeg_cover()        160x96 baseline JPEG (a video cover / poster frame)
  webp_thumbnail()    160x96 lossy WebP (a video thumbnail)
  jpeg_spritesheet()  4 x 2 grid of 80x48 frames as one 320x96 JPEG
  mp3_clip()          1 s of a 440 Hz tone, MPEG layer III (starts with an ID3 tag)
  text_file()         a few lines of UTF-8 text (an OCR result)

`sniff(data)` names the format of bytes from their magic numbers, for the tests' checks.
"""

from __future__ import annotations

import functools
import io
import math
import struct
from fractions import Fraction

import av
from PIL import Image, ImageDraw

from tests.support.media_fixtures import encode_tone

CONTENT_TYPES: dict[str, str] = {
    "mp4": "video/mp4",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    "mp3": "audio/mpeg",
    "txt": "text/plain; charset=utf-8",
}
VIDEO_SIZE = (160, 96)
VIDEO_FPS = 12
VIDEO_SECONDS = 1
AUDIO_RATE = 24_000
OCR_TEXT = "UNIGATE FAKE OCR RESULT\nHello from the fake upstream.\n12345\n"


@functools.cache
def mp4(audio: bool = True) -> bytes:
    """A 1 s H.264 MP4 (colour sweep), with an AAC track when `audio`."""
    width, height = VIDEO_SIZE
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        video = container.add_stream(
            "libx264", rate=VIDEO_FPS, options={"preset": "ultrafast", "threads": "1"}
        )
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        sound = container.add_stream("aac", rate=AUDIO_RATE, layout="mono") if audio else None
        frames = VIDEO_FPS * VIDEO_SECONDS
        for i in range(frames):
            image = Image.new("RGB", (width, height), (20 * i % 256, 90, 200 - 10 * i % 200))
            ImageDraw.Draw(image).rectangle((8 * i, 30, 8 * i + 30, 66), fill=(250, 250, 250))
            frame = av.VideoFrame.from_image(image).reformat(format="yuv420p")  # type: ignore[no-untyped-call]
            frame.pts, frame.time_base = i, Fraction(1, VIDEO_FPS)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if sound is not None:
            count = AUDIO_RATE * VIDEO_SECONDS
            step = 2 * math.pi * 440 / AUDIO_RATE
            pcm = struct.pack(f"<{count}h", *(round(8000 * math.sin(step * n)) for n in range(count)))
            chunk = av.AudioFrame(format="s16", layout="mono", samples=count)
            chunk.planes[0].update(pcm)
            chunk.sample_rate, chunk.pts, chunk.time_base = AUDIO_RATE, 0, Fraction(1, AUDIO_RATE)
            container.mux(sound.encode(chunk))
            container.mux(sound.encode(None))
    return out.getvalue()


def _save(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


@functools.cache
def png() -> bytes:
    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    ImageDraw.Draw(image).rectangle((12, 12, 51, 51), fill=(40, 160, 90, 255))
    return _save(image, "PNG")


@functools.cache
def mask_png() -> bytes:
    image = Image.new("L", (64, 64), 0)
    ImageDraw.Draw(image).rectangle((12, 12, 51, 51), fill=255)
    return _save(image, "PNG")


def _poster() -> Image.Image:
    image = Image.new("RGB", VIDEO_SIZE, (20, 90, 200))
    ImageDraw.Draw(image).rectangle((20, 30, 50, 66), fill=(250, 250, 250))
    return image


@functools.cache
def jpeg_cover() -> bytes:
    return _save(_poster(), "JPEG", quality=80)


@functools.cache
def webp_thumbnail() -> bytes:
    return _save(_poster(), "WEBP", quality=70)


@functools.cache
def jpeg_spritesheet() -> bytes:
    tile = (80, 48)
    sheet = Image.new("RGB", (tile[0] * 4, tile[1] * 2))
    for n in range(8):
        frame = _poster().resize(tile)
        ImageDraw.Draw(frame).rectangle((n * 8, 4, n * 8 + 8, 12), fill=(255, 200, 0))
        sheet.paste(frame, ((n % 4) * tile[0], (n // 4) * tile[1]))
    return _save(sheet, "JPEG", quality=75)


@functools.cache
def mp3_clip() -> bytes:
    return encode_tone(1.0, "mp3")


def text_file() -> bytes:
    return OCR_TEXT.encode()


def sniff(data: bytes) -> str:
    """ "mp4", "png", "jpeg", "webp", "mp3", "txt" or "unknown", from the leading bytes."""
    if data[4:8] == b"ftyp":
        return "mp4"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "mp3"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "unknown"
    return "txt"
