"""WAV reading and writing for the sandbox music clips (16-bit PCM mono, via `wave`)."""

from __future__ import annotations

import io
import sys
import wave
from array import array
from itertools import repeat
from operator import add, floordiv

_FLIP_SIGN = bytes(b ^ 0x80 for b in range(256))


def write_wav(samples: array[int], rate: int) -> bytes:
    """A complete WAV file of 16-bit mono samples (`array('h')`)."""
    if sys.byteorder == "big":  # WAV is little-endian; `array` is native
        samples = array("h", samples)
        samples.byteswap()
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(samples.tobytes())
    return out.getvalue()


def _to_int16(frames: bytes, width: int) -> array[int]:
    """Little-endian PCM of any common width to 16-bit, keeping the top two bytes of each sample."""
    count = len(frames) // width
    wide = bytearray(2 * count)
    if width == 1:  # 8-bit WAV is unsigned: flip the sign bit and use it as the high byte
        wide[1::2] = frames[:count].translate(_FLIP_SIGN)
    else:
        wide[0::2] = frames[width - 2 : count * width : width]
        wide[1::2] = frames[width - 1 : count * width : width]
    samples = array("h", bytes(wide))
    if sys.byteorder == "big":
        samples.byteswap()
    return samples


def read_wav(data: bytes) -> tuple[int, array[int]]:
    """(frame rate, 16-bit mono samples) of a PCM WAV file; other widths and stereo are converted.

    Raises `ValueError` when `data` is not a PCM WAV file.
    """
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            rate, width, channels = reader.getframerate(), reader.getsampwidth(), reader.getnchannels()
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a PCM WAV file: {exc}") from exc
    if width not in (1, 2, 3, 4) or channels < 1 or rate <= 0:
        raise ValueError(f"unsupported WAV: {width}-byte samples, {channels} channels, {rate} Hz")
    samples = _to_int16(frames, width)
    if channels > 1:  # down-mix by averaging the channels
        total = list(samples[0::channels])
        for channel in range(1, channels):
            total = list(map(add, total, samples[channel::channels]))
        samples = array("h", map(floordiv, total, repeat(channels)))
    return rate, samples


def wav_duration(data: bytes) -> float:
    """The duration of a WAV file in seconds (raises `ValueError` when it is not one)."""
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            frames, rate = reader.getnframes(), reader.getframerate()
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a PCM WAV file: {exc}") from exc
    if rate <= 0:
        raise ValueError("WAV file with a frame rate of 0")
    return frames / rate
