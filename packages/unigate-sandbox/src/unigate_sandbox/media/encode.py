"""Encode 16-bit mono PCM into the audio formats of OpenAI's speech endpoint, as a byte stream.

Compressed formats go through PyAV (FFmpeg) into an in-memory sink that is drained after
every packet, so memory stays bounded however long the audio is. The sink cannot seek:
muxers that would go back to patch a header (MP3's Xing frame, FLAC's total sample count)
simply leave it out, which every decoder accepts. Containers and codecs run in bit-exact
mode (no random Ogg serial numbers, no version strings), so the same PCM gives the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from fractions import Fraction
from typing import NamedTuple

import av

AUDIO_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
CONTENT_TYPES: dict[str, str] = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
_WAV_UNKNOWN = 0xFFFFFFFF  # RIFF/data size of a streamed WAV whose length is not known yet


class _Plan(NamedTuple):
    container: str
    codec: str
    rate: int | None  # fixed encoder rate (Opus always runs at 48 kHz), else the input rate
    muxer: tuple[tuple[str, str], ...]  # muxer options
    encoder: tuple[tuple[str, str], ...]  # encoder options: speech bit rates, fast settings


def _plan(fmt: str) -> _Plan:
    if fmt == "mp3":  # a bare MP3 stream: no ID3 tag, no Xing frame (it would need a seekable sink)
        muxer = (("id3v2_version", "0"), ("write_xing", "0"))
        return _Plan("mp3", "libmp3lame", None, muxer, (("b", "48000"), ("compression_level", "7")))
    if fmt == "opus":
        return _Plan("ogg", "libopus", 48_000, (), (("b", "32000"), ("compression_level", "5")))
    if fmt == "aac":  # the default "twoloop" coder is ~5x slower, for no audible gain on speech
        return _Plan("adts", "aac", None, (), (("b", "48000"), ("aac_coder", "fast")))
    return _Plan("flac", "flac", None, (), ())


class _Sink:
    """A write-only file for FFmpeg. No `seek`/`tell`, so PyAV treats it as a non-seekable pipe."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def write(self, data: bytes) -> int:
        self._buffer += data
        return len(data)

    def take(self) -> bytes:
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


def _aligned(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Non-empty chunks holding whole 16-bit samples (an odd byte is carried to the next chunk)."""
    carry = b""
    for chunk in chunks:
        data = carry + bytes(chunk) if carry else bytes(chunk)
        cut = len(data) - len(data) % 2
        carry = data[cut:]
        if cut:
            yield data[:cut]


def _encoder_rate(codec_name: str, rate: int) -> int:
    """`rate` if the encoder takes it, else its nearest supported rate (PyAV resamples for us)."""
    supported = av.Codec(codec_name, "w").audio_rates
    if not supported or rate in supported:
        return rate
    return min(supported, key=lambda candidate: (abs(candidate - rate), -candidate))


def _encode_av(chunks: Iterable[bytes], fmt: str, sample_rate: int) -> Iterator[bytes]:
    plan = _plan(fmt)
    sink = _Sink()
    # Bit-exact muxer and encoder: no random Ogg serial number, no library version strings.
    muxer = {"fflags": "+bitexact", **dict(plan.muxer)}
    output = av.open(sink, mode="w", format=plan.container, options=muxer)
    try:
        rate = plan.rate or _encoder_rate(plan.codec, sample_rate)
        encoder = {"flags": "+bitexact", **dict(plan.encoder)}
        stream = output.add_stream(plan.codec, rate=rate, layout="mono", options=encoder)
        if not isinstance(stream, av.AudioStream):  # narrows the type; add_stream of an audio codec
            raise TypeError(f"{plan.codec} is not an audio encoder")
        time_base = Fraction(1, sample_rate)
        pts = 0
        for pcm in _aligned(chunks):
            # The codec context converts format, rate and frame size to what the encoder wants.
            frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
            frame.planes[0].update(pcm)
            frame.sample_rate = sample_rate
            frame.time_base = time_base
            frame.pts = pts
            pts += frame.samples
            output.mux(stream.encode(frame))
            if data := sink.take():
                yield data
        output.mux(stream.encode(None))
    finally:
        output.close()  # writes the trailer (Ogg's last page, flushed LAME frames) into the sink
    if data := sink.take():
        yield data


def _wav_header(sample_rate: int, total_samples: int | None) -> bytes:
    """A 44-byte header for 16-bit mono PCM; unknown length → maximal sizes (streaming WAV)."""
    if total_samples is None:
        riff_size = data_size = _WAV_UNKNOWN
    else:
        data_size = min(2 * total_samples, _WAV_UNKNOWN - 36)
        riff_size = data_size + 36
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        *(b"RIFF", riff_size, b"WAVE", b"fmt ", 16, 1, 1, sample_rate, 2 * sample_rate, 2, 16),
        *(b"data", data_size),
    )


def _encode_wav(chunks: Iterable[bytes], sample_rate: int, total_samples: int | None) -> Iterator[bytes]:
    yield _wav_header(sample_rate, total_samples)
    if total_samples is None:
        yield from _aligned(chunks)
        return
    # A known length is a promise made in the header: cut extra samples, pad missing ones with silence.
    remaining = 2 * total_samples
    for pcm in _aligned(chunks):
        if remaining <= 0:
            break
        yield pcm[:remaining]
        remaining -= min(len(pcm), remaining)
    while remaining > 0:
        piece = min(remaining, 2 * sample_rate)
        yield bytes(piece)
        remaining -= piece


def encode_stream(
    pcm_chunks: Iterable[bytes], fmt: str, sample_rate: int, total_samples: int | None = None
) -> Iterator[bytes]:
    """Encode s16le mono PCM chunks into `fmt`, yielding the encoded bytes as they are produced.

    mp3: raw MP3 frames (LAME); opus: Ogg Opus at 48 kHz; aac: ADTS AAC; flac: native FLAC;
    wav: RIFF WAV, 16-bit; pcm: the input unchanged. WAV sizes are exact when `total_samples`
    is given (the audio is cut or padded to match), else both RIFF and data sizes are
    0xFFFFFFFF, the usual convention for streamed WAV: FFmpeg reads up to the end of the data,
    and Python's `wave` module reads it too (its frame count is then meaningless). The other
    formats ignore `total_samples`. Raises `ValueError` for an unknown format or bad arguments
    (checked at the call, before any streaming starts).
    """
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"unsupported audio format {fmt!r}; expected one of {', '.join(AUDIO_FORMATS)}")
    if sample_rate <= 0:
        raise ValueError("sample_rate must be positive")
    if total_samples is not None and total_samples < 0:
        raise ValueError("total_samples must not be negative")
    if fmt == "pcm":
        return (bytes(chunk) for chunk in pcm_chunks if chunk)
    if fmt == "wav":
        return _encode_wav(pcm_chunks, sample_rate, total_samples)
    return _encode_av(pcm_chunks, fmt, sample_rate)
