"""What an uploaded file is, by its first bytes, and the content types of the media formats
the gateway emits. Sniffing is cheap and happens at the edge, so a file that is not audio (or
not an image) gets a clear 400 whichever upstream the model routes to."""

from __future__ import annotations

import codecs
from collections.abc import Callable

SPEECH_CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
IMAGE_CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


def sniff_audio(head: bytes) -> str | None:
    """The container of an audio upload from its first bytes, or None if it is not one the
    speech APIs take (flac, m4a/mp4, mp3, mpga, ogg/opus, wav, webm)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm"
    if head[:3] == b"ID3":
        return "mp3"
    if len(head) > 1 and head[0] == 0xFF:
        # MPEG audio frame sync (mp3) or ADTS (aac): 11 / 12 set bits.
        if head[1] & 0xF6 == 0xF0:
            return "aac"
        if head[1] & 0xE0 == 0xE0:
            return "mp3"
    return None


def sniff_image(head: bytes) -> str | None:
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def _utf8_text(head: bytes) -> bool:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a cut last char is fine
    except UnicodeDecodeError:
        return False
    return b"\0" not in head


# The files the gateway stores under /media/, by extension: the type they are served as and
# the test their first bytes must pass to be served as it.
STORED_TYPES: dict[str, tuple[bytes, Callable[[bytes], bool]]] = {
    ".wav": (b"audio/wav", lambda h: h[:4] == b"RIFF" and h[8:12] == b"WAVE"),
    ".mp3": (b"audio/mpeg", lambda h: sniff_audio(h) == "mp3"),
    ".ogg": (b"audio/ogg", lambda h: h[:4] == b"OggS"),
    ".png": (b"image/png", lambda h: sniff_image(h) == "png"),
    ".jpg": (b"image/jpeg", lambda h: sniff_image(h) == "jpeg"),
    ".jpeg": (b"image/jpeg", lambda h: sniff_image(h) == "jpeg"),
    ".webp": (b"image/webp", lambda h: sniff_image(h) == "webp"),
    ".mp4": (b"video/mp4", lambda h: h[4:8] == b"ftyp"),
    ".pdf": (b"application/pdf", lambda h: h[:5] == b"%PDF-"),
    ".txt": (b"text/plain; charset=utf-8", _utf8_text),
}
SNIFF_BYTES = 4096  # what the checks above read of a file
UNVERIFIED_TYPE = b"application/octet-stream"


def verified_type(extension: str, head: bytes) -> bytes | None:
    """The content type of a stored file whose first bytes match its extension's format;
    None when they do not (the name claims a type the content is not)."""
    known = STORED_TYPES.get(extension.lower())
    if known is None or not known[1](head):
        return None
    return known[0]
