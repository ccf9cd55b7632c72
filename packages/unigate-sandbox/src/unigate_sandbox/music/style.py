"""Musical decisions for a sandbox clip, derived deterministically from its text inputs.

Everything here is plain data (no audio): the key, mode, tempo and instrument chosen from the
tags, and the melody "sung" by the prompt's words. Choices come from a stable hash (blake2b)
rather than `hash()`, so they survive interpreter restarts and `PYTHONHASHSEED`.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

MAJOR = (0, 2, 4, 5, 7, 9, 11)
MINOR = (0, 2, 3, 5, 7, 8, 10)


def word_set(spaced: str) -> frozenset[str]:
    """A set of words written as one whitespace-separated string (compact word lists)."""
    return frozenset(spaced.split())


_MINOR_WORDS = word_set(
    "sad dark minor melancholic melancholy gloomy moody somber sombre tragic lonely haunting "
    "blues doom gothic emo grief tears"
)
_MAJOR_WORDS = word_set("happy major bright joyful cheerful uplifting sunny fun hopeful")
_FAST_WORDS = word_set(
    "fast upbeat dance edm rock punk metal techno house trance drum dnb disco energetic hyper party"
)
_SLOW_WORDS = word_set("ballad slow ambient lofi chill calm downtempo lullaby sleepy relaxing")
_BEAT_WORDS = word_set(
    "beat beats drum drums rock pop dance edm disco funk hip hop rap trap house techno punk metal "
    "upbeat fast party reggaeton dnb lofi"
)
_FOUR_ON_FLOOR = word_set("dance edm disco house techno trance")
_PAD_WORDS = word_set("ambient ballad slow chill calm lullaby dreamy cinematic orchestral")
# Ordered: the first family that matches the tags wins.
_TIMBRES: tuple[tuple[str, frozenset[str]], ...] = (
    ("guitar", word_set("guitar acoustic folk country strum")),
    ("piano", word_set("piano keys classical jazz")),
    ("synth", word_set("synth synthwave edm electronic techno house trance chiptune 8bit")),
)
# Chord roots (scale degrees), one per bar; pop staples for major and for minor keys.
_MAJOR_PROGRESSIONS = ((0, 4, 5, 3), (0, 3, 4, 3), (5, 3, 0, 4), (0, 5, 3, 4))
_MINOR_PROGRESSIONS = ((0, 5, 2, 6), (0, 3, 4, 0), (0, 6, 5, 6), (0, 5, 3, 4))
# Register shift (in scale degrees) of the lines that follow a section marker.
_SECTION_SHIFT = (("pre", 2), ("chorus", 4), ("hook", 4), ("bridge", 2), ("outro", -2), ("intro", -2))

_WORD = re.compile(r"\w+")
_VOWELS = re.compile(r"[aeiouy]+")
_MARKER = re.compile(r"^\s*\[([^\]]*)\]\s*$")


def digest(*parts: object) -> int:
    """A stable 64-bit number for the parts (each part separated, so ("ab", "c") != ("a", "bc"))."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Style:
    """How a clip sounds: `root` is the MIDI note of the tonic in the melody's octave."""

    root: int
    minor: bool
    bpm: float
    timbre: str
    drums: bool
    four_on_floor: bool
    pad: bool
    progression: tuple[int, ...]

    @property
    def scale(self) -> tuple[int, ...]:
        return MINOR if self.minor else MAJOR

    def midi(self, degree: int, octave_shift: int = 0) -> int:
        """The MIDI note of a scale degree (7 is the tonic an octave up, -1 the leading tone below)."""
        octave, step = divmod(degree, 7)
        return self.root + 12 * (octave + octave_shift) + self.scale[step]


@dataclass(frozen=True)
class Note:
    """A melody note on the song's timeline, in beats, with its pitch as a scale degree."""

    start: float
    length: float
    degree: int


def tag_words(tags: str) -> frozenset[str]:
    """Lower-case words of the tags, hyphenated ones both joined and apart ("lo-fi": lofi, lo, fi)."""
    lowered = tags.lower()
    return frozenset(_WORD.findall(lowered.replace("-", ""))) | frozenset(_WORD.findall(lowered))


def describe_style(prompt: str, tags: str, title: str) -> Style:
    """Mode, tempo, instrument and band from the tags; key and what tags leave open from a hash."""
    words = tag_words(tags)
    seed = digest("style", prompt, tags, title)
    sad, happy = bool(words & _MINOR_WORDS), bool(words & _MAJOR_WORDS)
    minor = sad if sad != happy else bool(seed & 1)
    fast, slow = bool(words & _FAST_WORDS), bool(words & _SLOW_WORDS)
    if fast and not slow:
        bpm = 128 + (seed >> 8) % 24
    elif slow and not fast:
        bpm = 68 + (seed >> 8) % 16
    else:
        bpm = 96 + (seed >> 8) % 20
    timbre = next((name for name, family in _TIMBRES if words & family), "soft")
    progressions = _MINOR_PROGRESSIONS if minor else _MAJOR_PROGRESSIONS
    return Style(
        root=55 + (seed >> 16) % 12,
        minor=minor,
        bpm=float(bpm),
        timbre=timbre,
        drums=bool(words & _BEAT_WORDS),
        four_on_floor=bool(words & _FOUR_ON_FLOOR),
        pad=bool(words & _PAD_WORDS) or not words & _BEAT_WORDS,
        progression=progressions[(seed >> 24) % len(progressions)],
    )


def _syllables(word: str) -> int:
    groups = len(_VOWELS.findall(word.lower()))
    # Words without Latin vowels (digits, CJK, ...) get one note per character.
    return max(1, min(4, groups or len(word)))


def _section_shift(marker: str) -> int:
    name = marker.lower()
    return next((shift for key, shift in _SECTION_SHIFT if key in name), 0)


def _snap_to_chord(degree: int, chord_root: int) -> int:
    """The chord tone (root, third or fifth) nearest to `degree`, preferring the lower one."""
    for distance in (0, -1, 1, -2, 2):
        if (degree + distance - chord_root) % 7 in (0, 2, 4):
            return degree + distance
    return degree


def sung_lines(prompt: str, tags: str, title: str) -> list[tuple[int, list[str]]]:
    """The prompt's lines as (register shift, words); falls back to the title and tags."""
    lines: list[tuple[int, list[str]]] = []
    shift = 0
    for line in prompt.splitlines():
        marker = _MARKER.match(line)
        if marker:
            shift = _section_shift(marker.group(1))
        elif words := _WORD.findall(line):
            lines.append((shift, words))
    if not lines:
        words = _WORD.findall(f"{title} {tags}") or ["la", "la", "la", "la"]
        lines = [(0, words[i : i + 6]) for i in range(0, len(words), 6)]
    return lines


def melody(prompt: str, tags: str, title: str, variant: int, style: Style) -> tuple[tuple[Note, ...], float]:
    """The melody notes and the loop length in beats (a whole number of bars).

    Each word picks a scale degree from its hash and sings one note per syllable, stepping
    from there; every line starts on a new bar. The variant salts the hashes, so the two
    clips of a task are two different tunes over the same key, tempo and chords.
    """
    notes: list[Note] = []
    beat = 0.0
    for shift, words in sung_lines(prompt, tags, title):
        for word in words:
            bits = digest("word", word.lower(), variant)
            degree = bits % 7
            count = _syllables(word)
            for index in range(count):
                length = 0.5
                if index == count - 1 and bits >> 40 & 1:
                    length = 1.0  # hold the end of some words
                if index:
                    degree += (bits >> (8 + 2 * index)) % 3 - 1
                pitch = degree + shift
                if beat % 2 == 0:  # strong beats land on a chord tone, so the tune fits the bass
                    bar = int(beat // 4)
                    pitch = _snap_to_chord(pitch, style.progression[bar % len(style.progression)])
                notes.append(Note(beat, length, pitch))
                beat += length
        beat = math.ceil((beat + 0.5) / 4) * 4.0  # breathe, then start the next line on a new bar
        if len(notes) > 2000:  # a clip is short; very long lyrics need not be scored in full
            break
    return tuple(notes), max(beat, 4.0)
