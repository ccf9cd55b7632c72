"""Decode an uploaded audio file: its real duration, format and a loudness profile.

The sandbox transcription endpoint needs to know how long an upload really is (headers lie,
or are missing in streamed files), so the audio is decoded frame by frame with PyAV and the
samples are counted. Memory stays bounded: frames are dropped as soon as they are measured,
and the loudness profile is computed on a mono 8 kHz copy, one 0.5 s window at a time.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from operator import mul
from typing import BinaryIO

import av

WINDOW_SECONDS = 0.5  # one loudness value per window
_FEATURE_RATE = 8_000  # plenty for loudness
_STRIDE = 4  # RMS from every 4th sample: an unbiased estimate at a quarter of the pure-Python cost


# Demuxers an upload may use: audio containers plus the video ones audio often travels in.
# Playlist and reference formats (hls, concat, ...) are refused: they would make FFmpeg open
# other files or URLs named inside the upload.
_DEMUXERS = (
    "wav,w64,mp3,ogg,flac,aac,loas,mov,mp4,m4a,matroska,webm,asf,aiff,caf,amr,au,"
    "ac3,eac3,dts,wv,ape,tta,mpc,mpc8,mpeg"
)


class AudioInvalid(ValueError):
    """The upload is not decodable audio (the message is safe to show to the user)."""


@dataclass(frozen=True)
class AudioInfo:
    duration: float  # seconds, from the decoded samples
    sample_rate: int
    channels: int
    codec: str  # FFmpeg's codec name: "mp3", "opus", "aac", "flac", "pcm_s16le", ...
    loudness: list[float]  # RMS per 0.5 s window, 0..1 of full scale


class _Loudness:
    """RMS of consecutive windows of 16-bit samples, fed in arbitrary pieces."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.pending = array("h")
        self.values: list[float] = []

    def add(self, samples: array[int]) -> None:
        self.pending.extend(samples)
        while len(self.pending) >= self.window:
            self._measure(self.pending[: self.window])
            del self.pending[: self.window]

    def finish(self) -> list[float]:
        if self.pending:  # the last, partial window
            self._measure(self.pending)
            self.pending = array("h")
        return self.values

    def _measure(self, window: array[int]) -> None:
        samples = window[::_STRIDE]
        rms = math.sqrt(sum(map(mul, samples, samples)) / len(samples)) / 32768
        self.values.append(round(min(1.0, rms), 4))


def _plane_samples(frame: av.AudioFrame) -> array[int]:
    """The s16 mono samples of a resampled frame (the plane may carry alignment padding)."""
    return array("h", bytes(frame.planes[0])[: 2 * frame.samples])


def probe_audio(path_or_file: str | BinaryIO) -> AudioInfo:
    """Decode an audio file (any container/codec FFmpeg knows) and describe it.

    The duration counts the decoded samples rather than trusting headers. Raises
    `AudioInvalid` when the data is not audio, holds no audio stream, or decodes to nothing.
    A file that turns corrupt part-way is measured up to the damage.
    """
    if isinstance(path_or_file, str):
        # Opened here, not by FFmpeg, so the string is only ever a local path, never a URL.
        try:
            with open(path_or_file, "rb") as file:
                return _probe(file)
        except OSError as exc:
            raise AudioInvalid("the file could not be read") from exc
    return _probe(path_or_file)


def _probe(file: BinaryIO) -> AudioInfo:
    try:
        container = av.open(file, mode="r", options={"format_whitelist": _DEMUXERS})
    except (av.FFmpegError, OSError, ValueError, UnicodeDecodeError) as exc:
        raise AudioInvalid("the file could not be read as audio") from exc
    with container:
        if not container.streams.audio:
            raise AudioInvalid("the file contains no audio")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="s16", layout="mono", rate=_FEATURE_RATE)
        loudness = _Loudness(round(WINDOW_SECONDS * _FEATURE_RATE))
        counts: dict[int, int] = {}  # samples decoded at each rate (it may change mid-stream)
        sample_rate = channels = 0
        try:
            for frame in container.decode(stream):
                if not frame.samples or frame.sample_rate <= 0:
                    continue
                if not sample_rate:
                    sample_rate, channels = frame.sample_rate, frame.layout.nb_channels
                counts[frame.sample_rate] = counts.get(frame.sample_rate, 0) + frame.samples
                for piece in resampler.resample(frame):
                    loudness.add(_plane_samples(piece))
            for piece in resampler.resample(None):
                loudness.add(_plane_samples(piece))
        except (av.FFmpegError, ValueError) as exc:
            if not sample_rate:  # nothing decodable at all
                raise AudioInvalid("the file could not be decoded as audio") from exc
        codec = stream.codec.canonical_name
    seconds = sum(count / rate for rate, count in counts.items())
    if not sample_rate or seconds <= 0:
        raise AudioInvalid("the audio is empty")
    return AudioInfo(
        duration=seconds,
        sample_rate=sample_rate,
        channels=channels,
        codec=codec,
        loudness=loudness.finish(),
    )
