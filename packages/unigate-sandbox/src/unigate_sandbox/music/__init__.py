"""Offline media for the sandbox music provider: audio clips, cover art and lyrics.

Pure, deterministic functions (standard library only): the same inputs always give the
same bytes, so tasks can be replayed and tested. Audio is 16-bit mono WAV, covers are RGB
PNG, lyrics are plain text with `[Section]` markers.
"""

from __future__ import annotations

from unigate_sandbox.music.cover import render_cover, render_cover_large
from unigate_sandbox.music.lyrics import write_lyrics
from unigate_sandbox.music.style import Style, describe_style
from unigate_sandbox.music.synth import render_clip
from unigate_sandbox.music.wavio import read_wav, wav_duration

__all__ = [
    "Style",
    "describe_style",
    "read_wav",
    "render_clip",
    "render_cover",
    "render_cover_large",
    "wav_duration",
    "write_lyrics",
]
