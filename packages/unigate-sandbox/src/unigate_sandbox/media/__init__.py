"""Offline, deterministic media for the sandbox provider: speech, audio encoding and probing,
pseudo-transcripts, and generated or edited images.

Imports PyAV and Pillow, so the gateway imports this package lazily, only when an audio or
image request arrives: the text path never pays for them.
"""

from __future__ import annotations

from unigate_sandbox.media.encode import AUDIO_FORMATS, CONTENT_TYPES, encode_stream
from unigate_sandbox.media.images import (
    IMAGE_CONTENT_TYPES,
    IMAGE_FORMATS,
    ImageInvalid,
    aspect_size,
    check_edit_input,
    edit_image,
    generate_image,
    image_info,
    parse_size,
)
from unigate_sandbox.media.probe import AudioInfo, AudioInvalid, probe_audio
from unigate_sandbox.media.speech import SPEECH_RATE, speech_duration, synthesize
from unigate_sandbox.media.transcript import Segment, Transcript, Word, to_srt, to_vtt, transcribe

__all__ = [
    "AUDIO_FORMATS",
    "CONTENT_TYPES",
    "IMAGE_CONTENT_TYPES",
    "IMAGE_FORMATS",
    "SPEECH_RATE",
    "AudioInfo",
    "AudioInvalid",
    "ImageInvalid",
    "Segment",
    "Transcript",
    "Word",
    "aspect_size",
    "check_edit_input",
    "edit_image",
    "encode_stream",
    "generate_image",
    "image_info",
    "parse_size",
    "probe_audio",
    "speech_duration",
    "synthesize",
    "to_srt",
    "to_vtt",
    "transcribe",
]
