"""Render a short, deterministic piece of music for a sandbox clip as a WAV file.

The song is an endless loop on a beat timeline (melody from the prompt's words, bass and
pad on a chord progression, drums when the tags call for them); a clip is a window of it.
A continuation renders the window that starts where the source clip is cut, so extending
a clip of the same prompt carries on with the same tune, key and tempo.
"""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, mul
from types import MappingProxyType

from unigate_sandbox.music import voices
from unigate_sandbox.music.style import Note, Style, describe_style, digest, melody
from unigate_sandbox.music.wavio import read_wav, write_wav

MAX_SECONDS = 120.0  # the mix is a list of floats (~32 bytes a sample): ~85 MB at this length, 22.05 kHz
PEAK = 0.89 * 32767  # headroom below full scale: no clipping, no intersample overs
_CROSSFADE = 0.02  # seconds of overlap between a continued clip and its new material
# How long a melody note sounds, in beats past its written length, per instrument.
_RING: Mapping[str, float] = MappingProxyType({"soft": 0.1, "piano": 0.75, "synth": -0.1, "guitar": 1.0})


@dataclass
class _Session:
    """Per-render state: the window being rendered and caches of rendered notes."""

    style: Style
    rate: int
    offset: int  # first sample of the window on the song's timeline
    count: int
    rng: random.Random
    tables: dict[str, list[float]] = field(default_factory=dict)
    sounds: dict[tuple[object, ...], list[float]] = field(default_factory=dict)

    @property
    def beat(self) -> float:
        """Samples per beat."""
        return 60.0 / self.style.bpm * self.rate

    def table(self, name: str) -> list[float]:
        if name not in self.tables:
            self.tables[name] = voices.wavetable(voices.HARMONICS[name])
        return self.tables[name]

    def envelope(self, count: int, shape: tuple[float, float, float, float]) -> list[float]:
        """A cached envelope; `shape` is (gain, decay, attack, release) as for `voices.envelope`."""
        key = ("envelope", count, shape)
        if key not in self.sounds:
            self.sounds[key] = voices.envelope(count, self.rate, *shape)
        return self.sounds[key]

    def at(self, beat: float) -> int:
        """The buffer index of a point on the song's timeline (may lie outside the window)."""
        return round(beat * self.beat) - self.offset

    def beats_in_window(self, margin: float) -> range:
        first = math.floor(self.offset / self.beat - margin)
        return range(max(0, first), math.ceil((self.offset + self.count) / self.beat) + 1)


def _melody_sound(session: _Session, midi: int, count: int) -> list[float]:
    key = ("melody", midi, count)
    if key in session.sounds:
        return session.sounds[key]
    rate, timbre, freq = session.rate, session.style.timbre, voices.midi_hz(midi)
    if timbre == "guitar":  # an octave down: a guitar's range, and a longer (more exact) string period
        sound = voices.pluck(freq / 2, count, rate, 0.8, session.rng)
    elif timbre == "piano":  # bright harmonics fade within half a second, the body lingers
        mellow = voices.tone(voices.cycle_chunk(session.table("piano_mellow"), freq, rate), count)
        sound = voices.shaped(mellow, session.envelope(count, (0.3, 1.6, 0.003, 0.06)))
        short = min(count, rate // 2)
        bright = voices.tone(voices.cycle_chunk(session.table("piano_bright"), freq, rate), short)
        sound[:short] = map(
            add, sound[:short], map(mul, bright, session.envelope(short, (0.3, 6.0, 0.003, 0.05)))
        )
    elif timbre == "synth":
        chunk = voices.cycle_chunk(session.table("synth_lead"), freq, rate)
        sound = voices.sustained(chunk, count, rate, 0.4, 0.008, 0.04)
    else:
        chunk = voices.cycle_chunk(session.table("soft"), freq, rate)
        sound = voices.shaped(voices.tone(chunk, count), session.envelope(count, (0.5, 1.2, 0.02, 0.05)))
    session.sounds[key] = sound
    return sound


def _tone(
    session: _Session, table: str, midi: int, count: int, shape: tuple[float, float, float]
) -> list[float]:
    """A cached sustained wavetable note; `shape` is (gain, attack, release)."""
    key = (table, midi, count, shape)
    if key not in session.sounds:
        chunk = voices.cycle_chunk(session.table(table), voices.midi_hz(midi), session.rate)
        session.sounds[key] = voices.sustained(chunk, count, session.rate, *shape)
    return session.sounds[key]


def _add_melody(session: _Session, buffer: list[float], notes: tuple[Note, ...], loop: float) -> None:
    ring = _RING[session.style.timbre]
    window = session.beats_in_window(margin=2.0)
    for lap in range(int(window.start // loop), int(window.stop // loop) + 1):
        for note in notes:
            start = lap * loop + note.start
            if window.start <= start < window.stop:
                count = round((note.length + ring) * session.beat)
                sound = _melody_sound(session, session.style.midi(note.degree), count)
                voices.mix_into(buffer, sound, session.at(start))


def _add_band(session: _Session, buffer: list[float], variant: int) -> None:
    """Bass and pad on the chord progression, and drums when the style has them."""
    style, beat = session.style, session.beat
    chords = style.progression
    bass_step = 1 if style.drums else 2
    if style.drums:
        kick, snare = voices.kick(session.rate), voices.snare(session.rate, session.rng)
        hat = voices.hihat(session.rate, session.rng)
        extra_kick = 2.5 if (digest("groove", style, variant) & 1) else 1.5  # a syncopation per variant
    for number in session.beats_in_window(margin=4.0):
        chord = chords[(number // 4) % len(chords)]
        in_bar = number % 4
        if in_bar % bass_step == 0:
            degree = chord + (4 if in_bar == 3 or (bass_step == 2 and in_bar == 2) else 0)
            count = round(bass_step * beat * 0.92)
            bass = _tone(session, "bass", style.midi(degree, -2), count, (0.42, 0.006, 0.04))
            voices.mix_into(buffer, bass, session.at(number))
        if style.pad and in_bar == 0:
            count = round(4.2 * beat)
            for third in (0, 2, 4):
                pad = _tone(session, "sine", style.midi(chord + third, -1), count, (0.09, 0.25, 0.35))
                voices.mix_into(buffer, pad, session.at(number))
        elif not style.pad and in_bar % 2:  # without a pad, off-beat chord stabs carry the harmony
            count = round(0.4 * beat)
            for third in (0, 2, 4):
                stab = _tone(session, "soft", style.midi(chord + third, -1), count, (0.1, 0.005, 0.05))
                voices.mix_into(buffer, stab, session.at(number + 0.5))
        if style.drums:
            if style.four_on_floor or in_bar in (0, 2):
                voices.mix_into(buffer, kick, session.at(number), 0.75)
            if in_bar == 3 and number % 8 == 7:
                voices.mix_into(buffer, kick, session.at(number - 4 + extra_kick), 0.6)
            if in_bar in (1, 3):
                voices.mix_into(buffer, snare, session.at(number), 0.4)
            for half in (0.0, 0.5):
                voices.mix_into(
                    buffer, hat, session.at(number + half), 0.22 if half or style.four_on_floor else 0.12
                )


def _render(
    prompt: str, tags: str, title: str, variant: int, rate: int, offset: int, count: int
) -> list[float]:
    """The unnormalised mix of `count` samples starting `offset` samples into the song."""
    style = describe_style(prompt, tags, title)
    seed = digest("clip", prompt, tags, title, variant)
    session = _Session(style, rate, offset, count, random.Random(seed))
    notes, loop = melody(prompt, tags, title, variant, style)
    buffer = [0.0] * count
    _add_melody(session, buffer, notes, loop)
    if style.pad or style.timbre == "synth":  # space around the lead; the drums stay dry
        voices.echo(buffer, round(0.75 * session.beat), 0.28)
    _add_band(session, buffer, variant)
    return buffer


def _to_pcm(buffer: list[float], fade_in: bool, rate: int) -> list[float]:
    """Scale to `PEAK` and fade the ends (in place), so the clip neither clips nor clicks."""
    edge = min(len(buffer) // 2, int(0.03 * rate))
    if edge:
        buffer[-edge:] = map(mul, buffer[-edge:], [(edge - i) / edge for i in range(1, edge + 1)])
        if fade_in:
            buffer[:edge] = map(mul, buffer[:edge], [i / edge for i in range(edge)])
    peak = max(max(buffer, default=0.0), -min(buffer, default=0.0))
    if peak > 0:
        buffer[:] = map(mul, buffer, repeat(PEAK / peak))
    return buffer


def render_clip(
    prompt: str,
    tags: str,
    title: str,
    variant: int,
    seconds: float = 8.0,
    sample_rate: int = 22050,
    continue_from: bytes | None = None,
    continue_at: float = 0.0,
) -> bytes:
    """A WAV file (16-bit PCM mono) of `seconds` of music derived from the inputs.

    The same inputs give identical bytes; variants are different takes of the same song.
    With `continue_from` (WAV bytes), the result is that clip's first `continue_at` seconds,
    sample for sample, followed by `seconds` of new material continuing the song from that
    point, at the source's sample rate (its samples are kept exactly, so it is not resampled).
    Raises `ValueError` for bad arguments or when `continue_from` is not a PCM WAV file.
    """
    if not 0 <= seconds <= MAX_SECONDS or not math.isfinite(continue_at):
        raise ValueError(f"seconds must be within 0..{MAX_SECONDS:g} and continue_at finite")
    if continue_from is None:
        if not 4000 <= sample_rate <= 192000:
            raise ValueError(f"unsupported sample rate {sample_rate}")
        mix = _to_pcm(
            _render(prompt, tags, title, variant, sample_rate, 0, round(seconds * sample_rate)),
            True,
            sample_rate,
        )
        return write_wav(array("h", map(float.__trunc__, mix)), sample_rate)
    rate, source = read_wav(continue_from)
    cut = min(len(source), max(0, round(continue_at * rate)))
    mix = _to_pcm(_render(prompt, tags, title, variant, rate, cut, round(seconds * rate)), False, rate)
    # Crossfade: the source's own continuation (or its last sample, held) fades out while the
    # new material fades in, so the join has no step in it.
    span = min(len(mix), int(_CROSSFADE * rate))
    if span:
        held = source[-1] if source else 0
        tail = [*source[cut : cut + span], *repeat(held, max(0, span - (len(source) - cut)))]
        fade_in = [i / span for i in range(span)]
        joined = map(add, map(mul, mix[:span], fade_in), map(mul, tail, [1.0 - f for f in fade_in]))
        mix[:span] = (min(32767.0, max(-32768.0, value)) for value in joined)
    return write_wav(source[:cut] + array("h", map(float.__trunc__, mix)), rate)
