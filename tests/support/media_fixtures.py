"""Real, deterministic test media (audio through PyAV, images through Pillow) and the request
recording shared by the fake media upstreams (fake_openai_media, fake_fish, fake_stability).

Audio formats understood by `encode_tone`:
  mp3   MPEG-1/2 layer III (libmp3lame) in a bare mp3 stream
  opus  Opus in an Ogg container, always 48 kHz (the Opus native rate)
  aac   AAC-LC in ADTS framing
  flac  native FLAC stream
  wav   RIFF/WAVE, PCM s16le mono (header written by hand)
  pcm   raw PCM s16le mono, no header
"""

from __future__ import annotations

import asyncio
import io
import math
import struct
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import av
import orjson
from aiohttp import BodyPartReader, web
from PIL import Image

AUDIO_CONTENT_TYPES: dict[str, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
IMAGE_CONTENT_TYPES: dict[str, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
_PIL_FORMATS: dict[str, str] = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG", "webp": "WEBP"}
# format -> (container, encoder)
_ENCODERS: dict[str, tuple[str, str]] = {
    "mp3": ("mp3", "libmp3lame"),
    "opus": ("ogg", "libopus"),
    "aac": ("adts", "aac"),
    "flac": ("flac", "flac"),
}


# --------------------------------------------------------------------------- audio


def tone_pcm(seconds: float, sample_rate: int = 24000, freq: float = 440.0, amplitude: float = 0.3) -> bytes:
    """`seconds` of a sine tone as raw PCM s16le mono."""
    count = max(0, round(seconds * sample_rate))
    peak = amplitude * 32767
    step = 2 * math.pi * freq / sample_rate
    return struct.pack(f"<{count}h", *(round(peak * math.sin(step * i)) for i in range(count)))


def wav_header(data_bytes: int, sample_rate: int = 24000, channels: int = 1, bits: int = 16) -> bytes:
    """The 44-byte canonical RIFF/WAVE header for `data_bytes` of PCM."""
    block = channels * bits // 8
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block, block, bits)
        + b"data"
        + struct.pack("<I", data_bytes)
    )


def encode_tone(seconds: float, fmt: str, sample_rate: int = 24000, freq: float = 440.0) -> bytes:
    """A sine tone of `seconds`, encoded as `fmt` (see the module docstring). Opus is always 48 kHz."""
    if fmt == "pcm":
        return tone_pcm(seconds, sample_rate, freq)
    if fmt == "wav":
        pcm = tone_pcm(seconds, sample_rate, freq)
        return wav_header(len(pcm), sample_rate) + pcm
    if fmt not in _ENCODERS:
        raise ValueError(f"unknown audio format {fmt!r}")
    container_name, encoder = _ENCODERS[fmt]
    rate = 48000 if fmt == "opus" else sample_rate
    pcm = tone_pcm(seconds, rate, freq)
    out = io.BytesIO()
    with av.open(out, "w", format=container_name) as container:
        stream: Any = container.add_stream(encoder, rate=rate, layout="mono")
        if fmt == "mp3":
            stream.bit_rate = 64000
        block = 4096  # samples per input frame; the encoder re-frames to its own frame size
        for start in range(0, len(pcm) // 2, block):
            chunk = pcm[start * 2 : (start + block) * 2]
            frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk) // 2)
            frame.planes[0].update(chunk)
            frame.sample_rate = rate
            frame.pts = start
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def decode_audio(data: bytes, *, pcm_rate: int | None = None) -> tuple[str, int, float]:
    """Decode `data` with PyAV: (codec name, sample rate, seconds counted from decoded samples).

    The codec name is FFmpeg's canonical one ("mp3", "opus", "aac", "flac", "pcm_s16le"). Raw PCM
    has no header to probe: pass `pcm_rate` to read `data` as s16le mono at that rate."""
    options = {"sample_rate": str(pcm_rate), "ch_layout": "mono"} if pcm_rate else {}
    fmt = "s16le" if pcm_rate else None
    with av.open(io.BytesIO(data), "r", format=fmt, options=options) as container:
        stream = container.streams.audio[0]
        samples = 0
        rate = 0
        for frame in container.decode(stream):
            samples += frame.samples
            rate = frame.sample_rate
        rate = rate or stream.codec_context.sample_rate or 0
        name = stream.codec_context.codec.canonical_name
    if rate <= 0 or samples <= 0:
        raise ValueError("no audio decoded")
    return name, rate, samples / rate


def big_wav(path: Path, megabytes: int) -> int:
    """Write a valid WAV of about `megabytes` MiB (alternating seconds of silence and tone,
    s16 mono 24 kHz) to `path`, one second at a time; returns the file size in bytes."""
    rate = 24000
    second = rate * 2
    data_bytes = max(second, (megabytes * 1024 * 1024 - 44) // second * second)
    tone = tone_pcm(1.0, rate)
    silence = bytes(second)
    with path.open("wb") as f:
        f.write(wav_header(data_bytes, rate))
        for i in range(data_bytes // second):
            f.write(tone if i % 2 else silence)
    return path.stat().st_size


# --------------------------------------------------------------------------- images


def make_image(
    width: int,
    height: int,
    fmt: str = "png",
    color: tuple[int, int, int] = (200, 50, 50),
    alpha: bool = False,
) -> bytes:
    """A solid-colour image of `width` x `height` in png / jpeg / webp (alpha ignored for jpeg)."""
    pil_format = _PIL_FORMATS[fmt.lower()]
    if alpha and pil_format != "JPEG":
        img = Image.new("RGBA", (width, height), (*color, 255))
    else:
        img = Image.new("RGB", (width, height), color)
    out = io.BytesIO()
    img.save(out, format=pil_format)
    return out.getvalue()


def make_mask(width: int, height: int) -> bytes:
    """An RGBA PNG mask: left half fully transparent (the area to edit), right half opaque."""
    img = Image.new("RGBA", (width, height), (0, 0, 0, 255))
    img.paste((0, 0, 0, 0), (0, 0, width // 2, height))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def image_info(data: bytes) -> tuple[str, int, int]:
    """(format in lower case - "png", "jpeg", "webp", ... -, width, height) of an encoded image."""
    with Image.open(io.BytesIO(data)) as img:
        img.load()
        return (img.format or "").lower(), img.width, img.height


# --------------------------------------------------------------------------- fake-server side


@dataclass
class Received:
    path: str  # request path incl. query string
    headers: dict[str, str]  # lower-cased names
    fields: dict[str, list[str]]  # multipart text fields by name as sent; {} for JSON bodies
    files: dict[str, list[tuple[str, str, bytes]]]  # name -> [(filename, content type, bytes)]
    json: dict[str, Any] | None  # the parsed body when the request was JSON


async def read_request(request: web.Request) -> Received:
    """Read the whole request into a `Received`. Multipart parts with a filename are files (the
    content type is recorded as sent, "" when the part had none), the others text fields; any
    other non-empty body is parsed as JSON (left None when it is not a JSON object)."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    fields: dict[str, list[str]] = {}
    files: dict[str, list[tuple[str, str, bytes]]] = {}
    body_json: dict[str, Any] | None = None
    if request.content_type.startswith("multipart/"):
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue  # nested multipart: not something these vendors accept
            name = part.name or ""
            data = bytes(await part.read(decode=False))
            if part.filename is not None:
                ctype = part.headers.get("Content-Type", "")
                files.setdefault(name, []).append((part.filename, ctype, data))
            else:
                fields.setdefault(name, []).append(data.decode("utf-8", "replace"))
    else:
        raw = await request.read()
        if raw:
            try:
                parsed = orjson.loads(raw)
            except orjson.JSONDecodeError:
                parsed = None
            body_json = parsed if isinstance(parsed, dict) else None
    return Received(request.path_qs, headers, fields, files, body_json)


def first(rec: Received, name: str, default: str | None = None) -> str | None:
    """The first value of multipart field `name`, else `default`."""
    values = rec.fields.get(name)
    return values[0] if values else default


def chunked(data: bytes, size: int) -> Iterable[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def repeated(block: bytes, total: int, size: int) -> Iterable[bytes]:
    """`total` bytes made by repeating `block`, produced lazily in chunks of `size`."""
    tile = (block * (size // max(1, len(block)) + 1))[:size]
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield tile if n == size else tile[:n]
        sent += n


async def paced(chunks: Iterable[bytes], pause: float) -> AsyncIterator[bytes]:
    """Yield `chunks`, sleeping `pause` seconds between them (a bare yield to the loop when 0)."""
    for i, chunk in enumerate(chunks):
        if i:
            await asyncio.sleep(pause)
        yield chunk


class _StreamingFake(Protocol):
    mode: str
    slow_seconds: float
    cancelled: int
    streamed_bytes: int


async def stream_audio(
    request: web.Request, pieces: Iterable[bytes], content_type: str, fake: _StreamingFake
) -> web.StreamResponse:
    """Send `pieces` chunked, paced by `fake.slow_seconds`; `die_mid` drops the connection
    after the first chunk; a client that leaves is counted in `fake.cancelled`."""
    resp = web.StreamResponse(headers={"Content-Type": content_type})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    try:
        async for chunk in paced(pieces, fake.slow_seconds):
            await resp.write(chunk)
            fake.streamed_bytes += len(chunk)
            if fake.mode == "die_mid":
                assert request.transport is not None
                request.transport.close()
                return resp
        await resp.write_eof()
    except (asyncio.CancelledError, ConnectionResetError):
        fake.cancelled += 1
        raise
    return resp
