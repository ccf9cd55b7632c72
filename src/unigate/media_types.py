"""What an uploaded file is, by its first bytes, and the content types of the media formats
the gateway emits. Sniffing is cheap and happens at the edge, so a file that is not audio (or
not an image) gets a clear 400 whichever upstream the model routes to."""

from __future__ import annotations

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
