"""Speech-like audio for the sandbox text-to-speech endpoint (raw PCM, generated chunk by chunk).

Every character of the text owns a fixed slice of time (0.06 s / speed), so the duration is
known up front and grows with the text. Words sound as short voiced tones, split into
syllables with a falling pitch contour; spaces and punctuation are silence, so gaps between
words are short and gaps after punctuation ("., ") are longer. Pure Python and deterministic:
pitches come from SHA-256 hashes, never from Python's salted `hash()`.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import sys
from array import array
from collections.abc import Iterator

SPEECH_RATE = 24_000  # Hz, mono, 16-bit
_CHAR_SECONDS = 0.06  # time owned by one character at speed 1.0
_MIN_SECONDS = 0.3
_CHUNK_SECONDS = 0.25
_PEAK = 0.55 * 32767  # loud enough to hear, with headroom for the harmonics
_LEVELS = 24  # envelope steps; a step changes only at a period boundary, where the tone crosses zero
_HARMONICS = ((1, 1.0), (2, 0.45), (3, 0.2))  # (multiple of f0, relative amplitude)
_NORM = sum(amp for _, amp in _HARMONICS)
_VOWELS = frozenset("aeiouyAEIOUY")
# A word: letters/digits, with inner apostrophes ("don't"); everything else is silence.
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")


def _check_speed(speed: float) -> None:
    if not (speed > 0 and math.isfinite(speed)):
        raise ValueError("speed must be a positive number")


def speech_duration(text: str, speed: float = 1.0) -> float:
    """Seconds of audio that `synthesize(text, speed=speed)` produces (to within one sample)."""
    _check_speed(speed)
    return max(_MIN_SECONDS, len(text) * _CHAR_SECONDS / speed)


def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")


def _to_le(samples: array[int]) -> bytes:
    """Little-endian bytes of 16-bit samples (PCM s16le is little-endian on every host)."""
    if sys.byteorder == "big":
        samples = array("h", samples)
        samples.byteswap()
    return samples.tobytes()


def _shape(phase: float) -> float:
    """The voiced waveform at `phase` (radians): a fundamental and two harmonics, peak below 1."""
    return sum(amp * math.sin(mult * phase) for mult, amp in _HARMONICS) / _NORM


class _Renderer:
    """Renders words for one `synthesize()` call, caching the few waveforms it keeps reusing.

    A tone's period is a whole number of samples, so one period starts and ends at zero and
    the envelope can change level between periods without clicks. With the envelope in
    `_LEVELS` steps, a (period, level) pair is rendered once per call: pure Python stays fast
    for minutes of audio, and the caches are bounded (a few hundred periods, eight bursts).
    """

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._periods: dict[tuple[int, int], bytes] = {}
        self._bursts: dict[tuple[int, int], bytes] = {}

    def _period(self, period: int, level: int) -> bytes:
        key = (period, level)
        if key not in self._periods:
            gain = _PEAK * level / _LEVELS
            wave = [round(gain * _shape(2 * math.pi * k / period)) for k in range(period)]
            self._periods[key] = _to_le(array("h", wave))
        return self._periods[key]

    def tone(self, freq: float, count: int, loudness: float) -> Iterator[bytes]:
        """`count` samples of a harmonic tone with attack and release, one period at a time."""
        period = max(2, round(self.rate / freq))
        attack = max(1.0, min(0.02 * self.rate, count / 4))
        release = max(1.0, min(0.045 * self.rate, count / 3))
        for start in range(0, count, period):
            middle = start + period / 2
            env = max(0.0, min(1.0, middle / attack, (count - middle) / release))
            yield self._period(period, round(env * loudness * _LEVELS))[: 2 * (count - start)]

    def burst(self, variant: int, count: int) -> bytes:
        """A short, quiet, decaying noise burst: the consonant at the start of a word."""
        key = (variant, count)
        if key not in self._bursts:
            rng = random.Random(variant)
            peak = 0.12 * 32767
            noise = [round(rng.uniform(-peak, peak) * (1 - k / count)) for k in range(count)]
            self._bursts[key] = _to_le(array("h", noise))
        return self._bursts[key]

    def word(self, word: str, base_freq: float, count: int) -> Iterator[bytes]:
        """Exactly `count` samples voicing `word`: an optional consonant burst, then its syllables."""
        seed = _digest("word", word.lower())
        freq = base_freq * (0.85 + 0.35 * (seed % 1000) / 1000)
        burst = 0
        if word[0] not in _VOWELS and not word[0].isdigit():
            burst = min(round(0.012 * self.rate), count // 6)
            if burst:
                yield self.burst(seed % 8, burst)
        syllables = max(1, round(len(word) / 3))
        voiced = count - burst
        edges = [burst + voiced * i // syllables for i in range(syllables + 1)]
        for i in range(syllables):
            # Declination: each syllable a little lower than the last, the first one stressed.
            contour = 1.06 - 0.12 * i / max(1, syllables - 1) + 0.02 * ((seed >> (4 * i)) % 5 - 2)
            stress = 1.0 if i == 0 else 0.75 + 0.05 * ((seed >> (3 * i)) % 4)
            yield from self.tone(freq * contour, edges[i + 1] - edges[i], stress)


def _silence(count: int, piece: int) -> Iterator[bytes]:
    """`count` samples of silence in pieces of at most `piece` samples (bounded memory)."""
    while count > 0:
        size = min(count, piece)
        yield bytes(2 * size)
        count -= size


def _pieces(text: str, voice: str, speed: float, rate: int) -> Iterator[bytes]:
    """The whole utterance as a sequence of PCM pieces of arbitrary (bounded) sizes."""
    unit = _CHAR_SECONDS * rate / speed  # samples per character
    piece = max(1, round(_CHUNK_SECONDS * rate))
    base_freq = 95.0 + _digest("voice", voice.strip().lower()) % 150  # 95..244 Hz: low to high voices
    renderer = _Renderer(rate)
    cursor = 0
    for match in _WORD.finditer(text):
        start, end = round(match.start() * unit), round(match.end() * unit)
        yield from _silence(start - cursor, piece)
        if end > start:
            yield from renderer.word(match.group(), base_freq, end - start)
        cursor = max(cursor, end)
    total = max(round(_MIN_SECONDS * rate), round(len(text) * unit))
    yield from _silence(total - cursor, piece)


def synthesize(
    text: str, voice: str = "alloy", speed: float = 1.0, sample_rate: int = SPEECH_RATE
) -> Iterator[bytes]:
    """Speech-like audio for `text` as raw PCM s16le mono at `sample_rate`, in ~0.25 s chunks.

    Deterministic; lasts `speech_duration(text, speed)` seconds. Generated lazily, so a long
    text never sits in memory as a whole signal. Raises `ValueError` for a bad speed or rate.
    """
    _check_speed(speed)  # validated here, before the caller starts streaming
    if sample_rate < 1000:
        raise ValueError("sample_rate must be at least 1000 Hz")
    return _chunks(_pieces(text, voice, speed, sample_rate), 2 * max(1, round(_CHUNK_SECONDS * sample_rate)))


def _chunks(pieces: Iterator[bytes], size: int) -> Iterator[bytes]:
    """Re-cut `pieces` into chunks of exactly `size` bytes (the last one may be shorter)."""
    pending = bytearray()
    for piece in pieces:
        pending += piece
        while len(pending) >= size:
            yield bytes(pending[:size])
            del pending[:size]
    if pending:
        yield bytes(pending)
