"""A deterministic pseudo-transcript whose timing follows the real audio.

Nothing is recognised: the words are read from a fixed text, at places picked by a generator
seeded with the audio's loudness profile (so different audio reads differently, the same audio
always the same). What is real is the timing: segments sit on the loud stretches of the
audio (quiet 0.5 s windows are pauses), last at most 5 s, and carry about 2.5 words per
second, so clients that align subtitles or word timestamps get plausible, consistent data.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from unigate_sandbox.media.probe import WINDOW_SECONDS, AudioInfo

_SILENCE = 0.003  # RMS below this is silence whatever the rest of the file does
_QUIET = 0.2  # a window under this fraction of the loudest one is a pause
_MAX_SEGMENT = 5.0  # seconds
_WORDS_PER_SECOND = 2.5
_WORD_SHARE = 0.8  # a word fills this much of its slot; the rest is the gap before the next one
_PROMPT_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_LANGUAGE_NAMES: Mapping[str, str] = MappingProxyType(
    {"english": "en", "spanish": "es", "french": "fr", "german": "de", "italian": "it"}
)
# Per-language vocabularies (space-separated words); other languages use the English one.
_VOCABULARY: Mapping[str, str] = MappingProxyType(
    {
        "en": (
            "the quick morning light falls across a quiet river and we walk along the old stone path "
            "talking about music weather travel and the small things that make a day feel good people "
            "gather near the market where fresh bread coffee and flowers wait under bright canvas while "
            "children laugh somewhere behind the gardens our plan is simple finish the work early call "
            "a friend cook dinner together then read until the city grows calm again every story needs "
            "time patience and a little luck so we keep listening learning and moving forward"
        ),
        "es": (
            "la mañana trae una luz tranquila sobre el río y caminamos juntos por el viejo sendero "
            "hablando de música viajes comida amigos y pequeñas cosas que hacen feliz el día"
        ),
        "fr": (
            "le matin apporte une lumière calme sur la rivière et nous marchons ensemble le long du "
            "vieux chemin en parlant de musique voyages amis et petites choses qui font une belle journée"
        ),
        "de": (
            "der morgen bringt ruhiges licht über den fluss und wir gehen gemeinsam den alten weg "
            "entlang und sprechen über musik reisen freunde und kleine dinge die einen tag schön machen"
        ),
        "it": (
            "il mattino porta una luce tranquilla sul fiume e camminiamo insieme lungo il vecchio "
            "sentiero parlando di musica viaggi amici e piccole cose che rendono bella la giornata"
        ),
    }
)


@dataclass(frozen=True)
class Word:
    word: str
    start: float
    end: float


@dataclass(frozen=True)
class Segment:
    id: int
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str  # ISO 639-1 code
    duration: float
    segments: list[Segment]
    words: list[Word]


def _language(language: str | None, translate: bool) -> str:
    if translate or not language or not language.strip():
        return "en"
    code = language.strip().lower().replace("_", "-").split("-")[0]
    return _LANGUAGE_NAMES.get(code, code)


def _spans(info: AudioInfo) -> list[tuple[float, float]]:
    """(start, end) of the loud stretches of the audio, each cut into pieces of at most 5 s."""
    peak = max(info.loudness, default=0.0)
    if peak < _SILENCE:
        return []
    threshold = max(_SILENCE, _QUIET * peak)
    runs: list[tuple[float, float]] = []
    run_start: float | None = None
    for index, value in enumerate([*info.loudness, 0.0]):  # the sentinel closes a trailing run
        start = min(index * WINDOW_SECONDS, info.duration)
        if value >= threshold and start < info.duration:
            run_start = start if run_start is None else run_start
        elif run_start is not None:
            runs.append((run_start, start))
            run_start = None
    spans: list[tuple[float, float]] = []
    for start, end in runs:
        pieces = max(1, math.ceil((end - start) / _MAX_SEGMENT - 1e-9))
        step = (end - start) / pieces
        spans.extend((start + i * step, start + (i + 1) * step) for i in range(pieces))
    return [(start, end) for start, end in spans if end > start]


def _ms(seconds: float, duration: float) -> float:
    """Seconds floored to the millisecond and kept inside [0, duration] (monotonic)."""
    return min(duration, max(0.0, math.floor(seconds * 1000 + 1e-6) / 1000))


def transcribe(
    info: AudioInfo, language: str | None = None, prompt: str | None = None, translate: bool = False
) -> Transcript:
    """A deterministic pseudo-transcript of the audio described by `info` (see the module doc).

    `language` defaults to "en" and is always "en" when translating. With a prompt, the first
    word echoes the prompt's first word. Silent audio gives an empty transcript.
    """
    code = _language(language, translate)
    vocabulary = _VOCABULARY.get(code, _VOCABULARY["en"]).split()
    profile = ",".join(f"{value:.4f}" for value in info.loudness)
    seed = hashlib.sha256(f"{info.duration:.3f}|{code}|{profile}".encode()).digest()
    rng = random.Random(int.from_bytes(seed[:8], "big"))
    echo = _PROMPT_WORD.search(prompt or "")
    segments: list[Segment] = []
    words: list[Word] = []
    for start, end in _spans(info):
        count = max(1, round(_WORDS_PER_SECOND * (end - start)))
        slot = (end - start) / count
        picked: list[str] = []
        offset = rng.randrange(len(vocabulary))  # each segment reads on from a random place: phrase-like
        for k in range(count):
            token = echo.group() if echo and not words else vocabulary[(offset + k) % len(vocabulary)]
            words.append(
                Word(
                    token,
                    _ms(start + k * slot, info.duration),
                    _ms(start + (k + _WORD_SHARE) * slot, info.duration),
                )
            )
            picked.append(token)
        text = " ".join(picked)
        segments.append(
            Segment(
                id=len(segments),
                start=_ms(start, info.duration),
                end=_ms(end, info.duration),
                text=text[:1].upper() + text[1:] + ".",
            )
        )
    return Transcript(
        text=" ".join(segment.text for segment in segments),
        language=code,
        duration=info.duration,
        segments=segments,
        words=words,
    )


def _stamp(seconds: float, separator: str) -> str:
    total = max(0, round(seconds * 1000))
    hours, rest = divmod(total, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def to_srt(t: Transcript) -> str:
    """SubRip subtitles: numbered cues, "00:00:01,500 --> 00:00:03,000", text, blank line."""
    return "".join(
        f"{index}\n{_stamp(s.start, ',')} --> {_stamp(s.end, ',')}\n{s.text}\n\n"
        for index, s in enumerate(t.segments, start=1)
    )


def to_vtt(t: Transcript) -> str:
    """WebVTT subtitles: the "WEBVTT" header, then "00:00:01.500 --> 00:00:03.000" cues."""
    cues = "".join(f"{_stamp(s.start, '.')} --> {_stamp(s.end, '.')}\n{s.text}\n\n" for s in t.segments)
    return "WEBVTT\n\n" + cues
