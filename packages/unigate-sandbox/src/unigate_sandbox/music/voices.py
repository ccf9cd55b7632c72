"""Sound sources for the sandbox synthesiser: wavetable tones, envelopes, plucks and drums.

Speed matters (a clip is rendered per request in pure Python), so per-sample work is pushed
into C: a note is one period-exact chunk of a wavetable repeated by list multiplication,
envelopes are running products (`itertools.accumulate`), and mixing is `map(operator.add)`
over slices. Python-level loops run per note, per block or per drum hit, not per sample.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from itertools import accumulate, repeat
from operator import add, mul
from types import MappingProxyType

TABLE_SIZE = 4096
# Relative harmonic amplitudes of the wavetables each instrument is built from.
HARMONICS: Mapping[str, tuple[float, ...]] = MappingProxyType(
    {
        "sine": (1.0,),
        "soft": (1.0, 0.28, 0.1, 0.04),
        "piano_bright": (1.0, 0.55, 0.35, 0.22, 0.16, 0.1, 0.07, 0.05),
        "piano_mellow": (1.0, 0.3, 0.08),
        "saw": tuple(1.0 / k for k in range(1, 11)),
        "synth_lead": (1.0, 0.35, 0.45, 0.2, 0.26, 0.12, 0.16, 0.07, 0.1, 0.05),  # saw, odd harmonics lifted
        "bass": (1.0, 0.45, 0.2),
    }
)


def midi_hz(note: float) -> float:
    """Equal temperament, A4 (MIDI 69) = 440 Hz."""
    return 440.0 * math.pow(2.0, (note - 69) / 12)


def wavetable(harmonics: tuple[float, ...]) -> list[float]:
    """One cycle, `TABLE_SIZE` samples long, peak-normalised to 1.

    Harmonic k of a sine table is the table repeated k times, read with stride k.
    """
    sine = [math.sin(2 * math.pi * i / TABLE_SIZE) for i in range(TABLE_SIZE)]
    table = [0.0] * TABLE_SIZE
    for k, amp in enumerate(harmonics, 1):
        if amp:
            table = list(map(add, table, map(mul, (sine * k)[::k], repeat(amp))))
    peak = max(map(abs, table)) or 1.0
    return list(map(mul, table, repeat(1.0 / peak)))


def cycle_chunk(table: list[float], freq: float, rate: int) -> list[float]:
    """A whole number of cycles whose length is (nearly) an integer number of samples.

    Repeating it gives the tone: taking the first cycle count that fits an integer length to
    within a third of a cent keeps the pitch true, unlike rounding a single period.
    """
    period = rate / freq
    cycles = next(
        (k for k in range(1, 33) if abs(k * period - round(k * period)) < k * period * 2e-4),
        min(range(1, 33), key=lambda k: abs(k * period - round(k * period)) / k),
    )
    length = max(1, round(cycles * period))
    increment = cycles * TABLE_SIZE / length
    return [table[int(i * increment) % TABLE_SIZE] for i in range(length)]


def tone(chunk: list[float], count: int) -> list[float]:
    """`count` samples of a cycle chunk repeated (list repetition runs in C)."""
    return (chunk * (count // len(chunk) + 1))[:count]


def fade_ends(samples: list[float], rate: int, attack: float, release: float) -> list[float]:
    """Linear ramps over the first `attack` and last `release` seconds, in place (no clicks)."""
    count = len(samples)
    ramp_in = min(count // 2, max(1, int(attack * rate)))
    samples[:ramp_in] = map(mul, samples[:ramp_in], [i / ramp_in for i in range(ramp_in)])
    ramp_out = min(count - ramp_in, max(1, int(release * rate)))
    samples[count - ramp_out :] = map(
        mul, samples[count - ramp_out :], [(ramp_out - i) / ramp_out for i in range(1, ramp_out + 1)]
    )
    return samples


def envelope(count: int, rate: int, gain: float, decay: float, attack: float, release: float) -> list[float]:
    """Linear attack, exponential decay (`decay` nepers per second), linear release (seconds)."""
    if count <= 0:
        return []
    curve = list(accumulate(repeat(math.exp(-decay / rate), count - 1), mul, initial=gain))
    return fade_ends(curve, rate, attack, release)


def sustained(
    chunk: list[float], count: int, rate: int, gain: float, attack: float, release: float
) -> list[float]:
    """A note with a flat sustain: only the attack and release ramps are multiplied per sample.

    The gain is applied to the short cycle chunk before it is repeated, so the body of a long
    note (pads, bass) costs one list repetition instead of an envelope pass.
    """
    return fade_ends(tone(list(map(mul, chunk, repeat(gain))), count), rate, attack, release)


def shaped(source: list[float], curve: list[float]) -> list[float]:
    """`source` times an envelope, sample by sample."""
    return list(map(mul, source, curve))


def pluck(freq: float, count: int, rate: int, gain: float, rng: random.Random) -> list[float]:
    """Karplus-Strong plucked string, computed one period (block) at a time.

    y[n] = k * (y[n-p] + y[n-p-1]): each new block is the previous one averaged with itself
    shifted by a sample, so a block costs two `map` calls instead of p Python iterations.
    """
    period = max(2, round(rate / freq))
    noise = [rng.uniform(-gain, gain) for _ in range(period)]
    out = list(map(mul, map(add, noise, noise[-1:] + noise[:-1]), repeat(0.5)))  # soften the attack
    keep = 0.5 * 0.9985
    while len(out) < count:
        prev = out[-period:]
        before = out[-period - 1] if len(out) > period else 0.0
        out.extend(map(mul, map(add, prev, [before, *prev[:-1]]), repeat(keep)))
    return fade_ends(out[:count], rate, 0.001, 0.05)


def kick(rate: int) -> list[float]:
    """A sine sweeping from 150 Hz down to 45 Hz with a fast decay."""
    count = int(0.28 * rate)
    out: list[float] = []
    phase = 0.0
    for i in range(count):
        t = i / rate
        phase += 2 * math.pi * (45.0 + 105.0 * math.exp(-t * 30.0)) / rate
        out.append(math.sin(phase) * math.exp(-t * 11.0))
    return fade_ends(out, rate, 0.002, 0.002)


def snare(rate: int, rng: random.Random) -> list[float]:
    """Noise with a little 185 Hz body, decaying over about 0.1 s."""
    count = int(0.18 * rate)
    out = [
        (rng.uniform(-1.0, 1.0) * 0.7 + 0.4 * math.sin(2 * math.pi * 185.0 * i / rate))
        * math.exp(-i / rate * 22.0)
        for i in range(count)
    ]
    return fade_ends(out, rate, 0.002, 0.002)


def hihat(rate: int, rng: random.Random) -> list[float]:
    """High-passed noise (first difference) with a very short decay."""
    count = int(0.06 * rate)
    noise = [rng.uniform(-1.0, 1.0) for _ in range(count + 1)]
    out = [(noise[i + 1] - noise[i]) * 0.5 * math.exp(-i / rate * 70.0) for i in range(count)]
    return fade_ends(out, rate, 0.002, 0.002)


def mix_into(buffer: list[float], samples: list[float], start: int, gain: float = 1.0) -> None:
    """Add `samples * gain` into `buffer` at `start`, clipped to the buffer at both ends."""
    begin, end = max(0, start), min(len(buffer), start + len(samples))
    if begin >= end:
        return
    part = samples if end - begin == len(samples) else samples[begin - start : end - start]
    if gain != 1.0:
        part = list(map(mul, part, repeat(gain)))
    buffer[begin:end] = map(add, buffer[begin:end], part)


def echo(buffer: list[float], delay: int, feedback: float) -> None:
    """A feedback delay, in place, one delay-length block at a time (the recursion is by block)."""
    if delay <= 0:
        return
    for begin in range(delay, len(buffer), delay):
        end = min(len(buffer), begin + delay)
        source = buffer[begin - delay : end - delay]
        buffer[begin:end] = map(add, buffer[begin:end], map(mul, source, repeat(feedback)))
