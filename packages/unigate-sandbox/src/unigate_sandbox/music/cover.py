"""Abstract cover art for sandbox clips, written as PNG by hand (no imaging library).

The picture is a diagonal two-colour gradient with translucent diagonal bands, a shaded orb
and a few discs, all placed and coloured from a hash of the title and tags (darker palettes
for sad or dark tags). It is drawn row by row with slices: every shape covers one horizontal
span of a row, so the work per row is a handful of slice operations, not a loop over pixels.
"""

from __future__ import annotations

import colorsys
import itertools
import math
import struct
import zlib
from collections.abc import Iterator

from unigate_sandbox.music.style import digest, tag_words, word_set

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_DARK_WORDS = word_set("sad dark minor melancholic gloomy moody night gothic doom metal haunting")

Colour = tuple[int, int, int]


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def encode_png(rows: list[bytes], width: int) -> bytes:
    """An 8-bit RGB PNG from rows of `3 * width` bytes (filter type 0 on every row)."""
    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + row for row in rows), 6)
    return _PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", pixels) + _chunk(b"IEND", b"")


def _colour(hue: float, saturation: float, value: float) -> Colour:
    red, green, blue = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return round(red * 255), round(green * 255), round(blue * 255)


def _mix(first: Colour, second: Colour, amount: float) -> Colour:
    return (
        round(first[0] + (second[0] - first[0]) * amount),
        round(first[1] + (second[1] - first[1]) * amount),
        round(first[2] + (second[2] - first[2]) * amount),
    )


def _tint_table(target: int, amount: float) -> bytes:
    """A `bytes.translate` table moving every channel value towards grey level `target`.

    Blending towards a grey acts the same on R, G and B, so one byte table can do it for a
    whole span of pixels in C.
    """
    return bytes(round(value + (target - value) * amount) for value in range(256))


def _span(y: int, centre: tuple[float, float], radius: float, size: int) -> tuple[int, int]:
    """The columns [start, stop) of row `y` inside a disc (empty when the row misses it)."""
    dy = y + 0.5 - centre[1]
    if abs(dy) >= radius:
        return 0, 0
    half = math.sqrt(radius * radius - dy * dy)
    return max(0, round(centre[0] - half)), min(size, round(centre[0] + half))


Band = tuple[float, float, float, bytes]  # (offset, width, slope, tint table)
Disc = tuple[tuple[float, float], float, Colour]  # (centre, radius, colour)


def _bands(size: int, bits: Iterator[int]) -> list[Band]:
    """Two to four translucent diagonal bands, lighter or darker than what they cross."""
    bands = []
    for _ in range(2 + next(bits) % 3):
        b = next(bits)
        width = size * (0.05 + (b % 100) / 600)
        tint = _tint_table(255 if b >> 8 & 1 else 0, 0.12 + (b >> 9) % 10 / 100)
        bands.append((size * ((b >> 16) % 1000) / 1000 - size / 2, width, 0.4 + (b >> 26) % 100 / 100, tint))
    return bands


def _discs(size: int, bits: Iterator[int], hue: float, value: float) -> list[Disc]:
    """A few flat discs, then the layers of a shaded orb (painted last, so it is on top)."""
    discs = []
    for _ in range(2 + next(bits) % 3):
        b = next(bits)
        centre = (size * (b % 1000) / 1000, size * ((b >> 10) % 1000) / 1000)
        colour = _colour(hue + (b >> 20) % 50 / 100, 0.5 + (b >> 27) % 40 / 100, value * 0.9 + 0.1)
        discs.append((centre, size * (0.04 + (b >> 33) % 100 / 800), colour))
    b = next(bits)
    orb_centre = (size * (0.3 + (b % 400) / 1000), size * (0.3 + ((b >> 10) % 400) / 1000))
    orb_radius = size * (0.18 + (b >> 20) % 100 / 1000)
    orb_base = _colour(hue + 0.5, 0.65, min(0.9, value + 0.2))
    layers = 12
    for layer in range(layers):  # shrinking discs drifting to the upper left read as a lit sphere
        shift = layer * orb_radius * 0.035  # small enough that every layer stays inside the first
        radius = orb_radius * (1 - layer / (layers + 1))
        colour = _mix(orb_base, (255, 250, 235), layer / (layers + 2))
        discs.append(((orb_centre[0] - shift, orb_centre[1] - shift), radius, colour))
    return discs


def render_cover(title: str, tags: str, size: int = 512) -> bytes:
    """A `size` x `size` RGB PNG cover derived from the title and tags (deterministic)."""
    if not 1 <= size <= 4096:
        raise ValueError(f"unsupported cover size {size}")
    seed = digest("cover", title, tags)
    bits = (digest("cover", title, tags, index) for index in itertools.count())
    hue = (seed % 360) / 360
    value = 0.35 if tag_words(tags) & _DARK_WORDS else 0.8
    start, end = _colour(hue, 0.7, value), _colour(hue + 0.12 + (seed >> 9) % 30 / 100, 0.8, value * 0.6)
    # A diagonal gradient: each row is a window onto one line of 2 * size pixels.
    line = bytearray()
    for x in range(2 * size - 1):
        line += bytes(_mix(start, end, x / max(1, 2 * size - 2)))
    flip = bool(seed >> 20 & 1)
    bands = _bands(size, bits)
    paints = [(centre, radius, bytes(colour)) for centre, radius, colour in _discs(size, bits, hue, value)]

    rows = []
    for y in range(size):
        offset = (size - 1 - y) if flip else y
        row = bytearray(line[3 * offset : 3 * (offset + size)])
        for position, width, slope, tint in bands:
            left = max(0, round(position + slope * y))
            right = min(size, round(position + slope * y + width))
            if left < right:
                row[3 * left : 3 * right] = row[3 * left : 3 * right].translate(tint)
        for centre, radius, paint in paints:
            left, right = _span(y, centre, radius, size)
            if left < right:
                row[3 * left : 3 * right] = paint * (right - left)
        rows.append(bytes(row))
    return encode_png(rows, size)


def render_cover_large(title: str, tags: str) -> bytes:
    """The large (1024 x 1024) variant of `render_cover`."""
    return render_cover(title, tags, 1024)
