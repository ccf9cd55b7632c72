"""The sandbox music provider's media: WAV clips, PNG covers and lyrics (pure functions)."""

from __future__ import annotations

import io
import math
import struct
import time
import wave
import zlib
from array import array
from itertools import pairwise

import pytest

from unigate_sandbox.music import (
    describe_style,
    read_wav,
    render_clip,
    render_cover,
    render_cover_large,
    wav_duration,
    write_lyrics,
)

PROMPT = (
    "[Verse]\nwalking down the empty street tonight\nthinking of the days gone by\n[Chorus]\nhold me close"
)

# --- helpers ---------------------------------------------------------------------------


def pcm(data: bytes) -> tuple[int, array[int]]:
    """(rate, samples) read with the standard library, checking the format on the way."""
    with wave.open(io.BytesIO(data), "rb") as reader:
        assert reader.getnchannels() == 1
        assert reader.getsampwidth() == 2
        assert reader.getcomptype() == "NONE"
        samples = array("h", reader.readframes(reader.getnframes()))
        return reader.getframerate(), samples


def rms(samples: array[int]) -> float:
    return math.sqrt(sum(v * v for v in samples) / max(1, len(samples)))


def goertzel(samples: array[int], rate: int, freq: float) -> float:
    """Power of one frequency over the whole clip (a one-bin DFT)."""
    coeff = 2 * math.cos(2 * math.pi * freq / rate)
    s1 = s2 = 0.0
    for value in samples:
        s1, s2 = value + coeff * s1 - s2, s1
    return s1 * s1 + s2 * s2 - coeff * s1 * s2


def third_ratio(samples: array[int], rate: int, root: int) -> float:
    """Energy at the minor third over energy at the major third of `root`, over three octaves.

    The lowest octaves are left out: the kick drum's pitch sweep passes through both thirds there.
    """

    def pitch_class(semitones: int) -> float:
        notes = (root + semitones + 12 * octave for octave in (-1, 0, 1))
        return sum(goertzel(samples, rate, 440 * 2 ** ((note - 69) / 12)) for note in notes)

    return pitch_class(3) / pitch_class(4)


def hit_rate(samples: array[int], rate: int, frame: int = 128) -> float:
    """Onsets per second in the high band (hi-hats and snares): sharp rises of frame energy."""
    high = [b - a for a, b in pairwise(samples)]
    energy = [sum(v * v for v in high[i : i + frame]) for i in range(0, len(high) - frame, frame)]
    top, count, last = max(energy), 0, -10
    for index, (before, now) in enumerate(pairwise(energy)):
        if now > 3 * before and now > 0.05 * top and index - last > 2:
            count, last = count + 1, index
    return count / (len(samples) / rate)


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, payload = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + payload), kind
        chunks.append((kind, payload))
        pos += 12 + length
    assert pos == len(data)
    return chunks


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, raw scanlines) of an 8-bit RGB PNG, with every chunk checked."""
    chunks = png_chunks(data)
    assert chunks[0][0] == b"IHDR" and chunks[-1] == (b"IEND", b"")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(payload for kind, payload in chunks if kind == b"IDAT"))
    return width, height, raw


# --- audio -----------------------------------------------------------------------------


def test_clip_is_valid_wav_of_requested_length() -> None:
    data = render_clip(PROMPT, "pop", "Street", 0)
    rate, samples = pcm(data)
    assert rate == 22050
    assert abs(len(samples) / rate - 8.0) <= 0.05
    assert wav_duration(data) == pytest.approx(8.0, abs=0.05)
    short = render_clip(PROMPT, "pop", "Street", 0, seconds=2.5, sample_rate=16000)
    rate, samples = pcm(short)
    assert rate == 16000 and abs(len(samples) / rate - 2.5) <= 0.05


@pytest.mark.parametrize(
    "tags", ["", "sad piano ballad", "edm dance", "acoustic guitar folk", "ambient synth", "fast rock"]
)
def test_clip_is_audible_without_clipping_or_clicks(tags: str) -> None:
    _, samples = pcm(render_clip(PROMPT, tags, "Street", 0))
    assert rms(samples) > 2000  # clearly not silent (full scale is 32767)
    assert max(samples) < 32767 and min(samples) > -32768
    assert abs(samples[0]) < 200 and abs(samples[-1]) < 200  # faded in and out


def test_clip_is_deterministic_and_variants_differ() -> None:
    first = render_clip(PROMPT, "pop", "Street", 0)
    assert render_clip(PROMPT, "pop", "Street", 0) == first
    assert render_clip(PROMPT, "pop", "Street", 1) != first
    assert render_clip(PROMPT + " again", "pop", "Street", 0) != first
    assert render_clip(PROMPT, "rock", "Street", 0) != first
    assert render_clip(PROMPT, "pop", "Avenue", 0) != first


def test_empty_prompt_is_an_instrumental_from_title_and_tags() -> None:
    _, samples = pcm(render_clip("", "", "", 0, seconds=2))
    assert rms(samples) > 1000


@pytest.mark.parametrize("mood", ["piano ballad", "pop", "guitar"])
def test_sad_tags_play_in_minor_and_happy_tags_in_major(mood: str) -> None:
    sad, happy = describe_style(PROMPT, f"sad {mood}", "T"), describe_style(PROMPT, f"happy {mood}", "T")
    assert sad.minor and not happy.minor
    rate, minor = pcm(render_clip(PROMPT, f"sad {mood}", "T", 0, seconds=4))
    _, major = pcm(render_clip(PROMPT, f"happy {mood}", "T", 0, seconds=4))
    # The scale's own third is far louder than the other third, in the key the style chose.
    assert third_ratio(minor, rate, sad.root) > 2
    assert third_ratio(major, rate, happy.root) < 1 / 2


@pytest.mark.parametrize("prompt", [PROMPT, "la la la love", ""])
def test_fast_tags_play_faster_than_slow_tags(prompt: str) -> None:
    fast, slow = describe_style(prompt, "fast pop", "T"), describe_style(prompt, "slow pop", "T")
    assert fast.bpm >= 128 > 96 > slow.bpm and fast.drums and slow.drums
    rate, quick = pcm(render_clip(prompt, "fast pop", "T", 0))
    _, lazy = pcm(render_clip(prompt, "slow pop", "T", 0))
    quick_rate, lazy_rate = hit_rate(quick, rate), hit_rate(lazy, rate)
    assert quick_rate > 1.3 * lazy_rate
    # Hi-hats are on eighth notes: the hit rate follows the tempo.
    assert quick_rate == pytest.approx(2 * fast.bpm / 60, rel=0.3)
    assert lazy_rate == pytest.approx(2 * slow.bpm / 60, rel=0.3)


def test_style_follows_tags() -> None:
    assert describe_style("x", "acoustic guitar", "t").timbre == "guitar"
    assert describe_style("x", "piano", "t").timbre == "piano"
    assert describe_style("x", "edm", "t").timbre == "synth"
    assert describe_style("x", "edm", "t").four_on_floor
    assert describe_style("x", "", "t").timbre == "soft"
    assert not describe_style("x", "ambient", "t").drums


def test_continuation_keeps_the_source_prefix_and_adds_new_material() -> None:
    source = render_clip(PROMPT, "fast pop", "Street", 0)
    rate, original = pcm(source)
    extended = render_clip(PROMPT, "fast pop", "Street", 0, seconds=6, continue_from=source, continue_at=5)
    _, samples = pcm(extended)
    cut = 5 * rate
    assert samples[:cut] == original[:cut]
    assert len(samples) == cut + 6 * rate
    assert rms(samples[cut:]) > 2000
    steps = [
        abs(b - a) for a, b in zip(samples[cut - 20 : cut + 20], samples[cut - 19 : cut + 21], strict=True)
    ]
    assert max(steps) < 4000  # crossfaded: no jump at the join
    assert (
        render_clip(PROMPT, "fast pop", "Street", 0, seconds=6, continue_from=source, continue_at=5)
        == extended
    )


def test_continuation_past_the_end_and_at_another_rate() -> None:
    source = render_clip(PROMPT, "pop", "Street", 0, seconds=2, sample_rate=16000)
    _, original = pcm(source)
    extended = render_clip(
        "new words", "ambient", "Other", 1, seconds=1, continue_from=source, continue_at=30
    )
    rate, samples = pcm(extended)
    assert rate == 16000  # the source's rate wins, so its samples are kept as they are
    assert samples[: len(original)] == original and len(samples) == len(original) + rate


def test_continuation_of_stereo_and_8_bit_sources() -> None:
    for width, channels in ((1, 1), (2, 2), (3, 1)):
        out = io.BytesIO()
        with wave.open(out, "wb") as writer:
            writer.setnchannels(channels)
            writer.setsampwidth(width)
            writer.setframerate(8000)
            writer.writeframes(bytes(range(256)) * width * channels * 10)
        rate, converted = read_wav(out.getvalue())
        assert rate == 8000 and len(converted) == 2560
        extended = render_clip("x", "", "t", 0, seconds=1, continue_from=out.getvalue(), continue_at=0.1)
        assert pcm(extended)[1][:800] == converted[:800]


def test_bad_input_raises_value_error() -> None:
    with pytest.raises(ValueError):
        render_clip("x", "", "t", 0, continue_from=b"not a wav file")
    with pytest.raises(ValueError):
        wav_duration(b"RIFF")
    for seconds in (-1.0, math.nan, math.inf, 10_000.0):
        with pytest.raises(ValueError):
            render_clip("x", "", "t", 0, seconds=seconds)
    with pytest.raises(ValueError):
        render_clip("x", "", "t", 0, sample_rate=10)


def test_rendering_is_fast() -> None:
    render_clip("warm up", "", "t", 0, seconds=1)
    for tags in ("", "sad piano ballad", "edm dance", "acoustic guitar"):
        started = time.perf_counter()
        render_clip(PROMPT, tags, "Street", 1)
        assert time.perf_counter() - started < 1.5, tags


# --- covers ----------------------------------------------------------------------------


def test_cover_is_a_valid_png() -> None:
    width, height, raw = png_pixels(render_cover("Summer Rain", "pop"))
    assert (width, height) == (512, 512)
    assert len(raw) == height * (1 + 3 * width)
    assert all(raw[row * (1 + 3 * width)] == 0 for row in range(height))  # filter type byte
    colours = {raw[i : i + 3] for i in range(1, len(raw) - 3, 3 * 97)}
    assert len(colours) > 20  # a picture, not a flat fill
    large = render_cover_large("Summer Rain", "pop")
    assert png_pixels(large)[:2] == (1024, 1024)
    assert png_pixels(render_cover("Summer Rain", "pop", size=64))[:2] == (64, 64)


def test_cover_is_deterministic_and_follows_title_and_tags() -> None:
    cover = render_cover("Summer Rain", "pop")
    assert render_cover("Summer Rain", "pop") == cover
    assert render_cover("Winter Snow", "pop") != cover
    assert render_cover("Summer Rain", "dark metal") != cover
    with pytest.raises(ValueError):
        render_cover("x", "y", size=0)


def test_cover_is_fast() -> None:
    started = time.perf_counter()
    render_cover("Summer Rain", "pop")
    assert time.perf_counter() - started < 1.0
    started = time.perf_counter()
    render_cover_large("Summer Rain", "pop")
    assert time.perf_counter() - started < 3.0


# --- lyrics ----------------------------------------------------------------------------


def test_lyrics_have_sections_and_follow_the_prompt() -> None:
    title, text = write_lyrics("An upbeat song about summer rain in Tokyo")
    assert title == "Summer Rain Tokyo"
    blocks = text.split("\n\n")
    markers = [block.splitlines()[0] for block in blocks]
    assert markers == ["[Verse 1]", "[Chorus]", "[Verse 2]", "[Chorus]", "[Bridge]", "[Outro]"]
    assert all(len(block.splitlines()) == 5 for block in blocks)  # marker + 4 lines
    assert blocks[1] == blocks[3]  # the chorus repeats
    lowered = text.lower()
    assert "summer" in lowered and "rain" in lowered and "tokyo" in lowered
    assert write_lyrics("An upbeat song about summer rain in Tokyo") == (title, text)
    assert write_lyrics("A song about winter roads")[1] != text


def test_lyrics_titles_are_short_title_case_and_never_empty() -> None:
    for prompt in ("", "a the of", "sad piano ballad", "supercalifragilistic " * 20, "東京の夜 雨"):
        title, text = write_lyrics(prompt)
        assert 0 < len(title) <= 60
        assert title == title.title() or not title.isascii()
        assert text.startswith("[Verse 1]\n")
