"""Visual tools for the sandbox's PicWish-style endpoints: background removal, object removal, upscaling.

Everything is plain Pillow (C-speed filters, Python only over run lengths), deterministic and pure:
bytes in, bytes out, no shared state, so the functions can run in worker threads.

- `segment` models the background by interpolating the border inward, classifies pixels by their
  colour distance to that model, cleans the mask with rank filters, fills holes inside the subject
  and drops specks, then feathers the edge by a pixel or two.
- `inpaint` fills the area to remove by push-pull diffusion: a pyramid that averages the known
  pixels down, then interpolates them back up into the hole, smoothing at every level.
- `upscale` is Lanczos plus a mild unsharp mask.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageOps

from unigate_sandbox.media.images import (
    IMAGE_FORMATS,
    MAX_PIXELS,
    ImageInvalid,
    _encode,
    _has_alpha,
    _open,
    image_info,
)

UPSCALE_FACTORS = (1, 2, 4)
_WORK_SIDE = 1024  # segmentation runs at most at this long side; the mask is scaled back up
_MODEL_SIDE = 48  # the background model is interpolated from the border at this size
_MIN_THRESHOLD, _MAX_THRESHOLD = 36, 192  # colour distance (sum of channel differences) bounds
_KEEP_SHARE = 0.02  # foreground parts under this share of the largest one are specks
_SMOOTH_PASSES = 2  # blur-and-paste passes per pyramid level: hides the pyramid's blocks
_NON_BLACK = 48  # a mask pixel brighter than this (in any channel) marks the area to remove
_WHITE_RUN, _BLACK_RUN = re.compile(b"\xff+"), re.compile(b"\x00+")

Run = tuple[int, int, int]  # (row, start, end): a horizontal run of equal pixels, end exclusive


def decode(data: bytes, what: str = "image") -> Image.Image:
    """Decode an untrusted upload (guarded against decompression bombs) or raise `ImageInvalid`."""
    return _open(data, what)


def segment(image: bytes) -> tuple[bytes, bytes]:
    """Remove the background: (cutout PNG in RGBA, mask PNG in mode L with 255 = foreground).

    The background is what matches the border's colours (a smooth model, so gradients work);
    the subject is the rest, holes filled. Raises `ImageInvalid` for undecodable uploads.
    """
    source = decode(image)
    picture = source.convert("RGBA")
    scale = min(1.0, _WORK_SIDE / max(picture.size))
    work_size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
    # BOX averages pixels while shrinking, which also tames sensor and JPEG noise.
    work = picture if scale == 1.0 else picture.resize(work_size, Image.Resampling.BOX)
    foreground = _classify(work.convert("RGB"))
    if _has_alpha(source):  # what the upload already made transparent stays background
        foreground = ImageChops.darker(foreground, _binary(work.getchannel("A"), 128))
    foreground = foreground.filter(ImageFilter.MedianFilter(5))
    # Closing: bridges hairline gaps in the subject before holes are filled.
    foreground = foreground.filter(ImageFilter.MaxFilter(5)).filter(ImageFilter.MinFilter(5))
    foreground = _keep_subject(foreground)
    if foreground.size != picture.size:
        foreground = _binary(foreground.resize(picture.size, Image.Resampling.BILINEAR), 128)
    alpha = foreground.filter(ImageFilter.GaussianBlur(0.8))  # a 1-2 px soft edge
    if _has_alpha(source):
        alpha = ImageChops.multiply(alpha, picture.getchannel("A"))
    picture.putalpha(alpha)
    return _encode(picture, "png"), _encode(alpha, "png")


def inpaint(
    image: bytes,
    *,
    mask: bytes | None = None,
    rectangles: list[tuple[int, int, int, int]] | None = None,
) -> bytes:
    """Remove what the mask or rectangles cover, filling it from the surroundings; a PNG.

    Give exactly one of `mask` (non-black pixels, or the opaque pixels of a mask with transparency,
    mark the area; resized to the image with NEAREST) and `rectangles` ((x, y, width, height),
    clipped to the image). Pixels outside the area are left exactly as decoded (RGB, or RGBA
    when the upload has transparency). Raises `ImageInvalid` for bad uploads or an empty area.
    """
    if (mask is None) == (rectangles is None):
        raise ImageInvalid("give exactly one of a mask or rectangles")
    source = decode(image)
    picture = source.convert("RGBA" if _has_alpha(source) else "RGB")
    if mask is not None:
        hole = _mask_area(mask, picture.size)
    else:
        hole = _rectangle_area(rectangles or [], picture.size)
    bounds = hole.getbbox()
    if bounds is None:
        raise ImageInvalid("the area to remove is empty")
    if hole.getextrema()[0] == 255:
        raise ImageInvalid("the area to remove covers the whole image: nothing to fill it from")
    # Only the neighbourhood matters, so fill a crop: big images stay fast.
    left, top, right, bottom = bounds
    pad = max(16, (right - left + bottom - top) // 8)
    box = (
        max(0, left - pad),
        max(0, top - pad),
        min(picture.width, right + pad),
        min(picture.height, bottom + pad),
    )
    region, region_hole = picture.crop(box), hole.crop(box)
    filled = _fill(region.convert("RGB"), region_hole)
    if picture.mode == "RGBA":
        filled = filled.convert("RGBA")
        filled.putalpha(_fill(region.getchannel("A"), region_hole))
    result = picture.copy()
    result.paste(filled, box[:2], region_hole)  # a binary paste mask: outside pixels stay identical
    return _encode(result, "png")


def upscale(image: bytes, factor: int, *, fmt: str | None = None) -> bytes:
    """Enlarge exactly `factor` times (1, 2 or 4) with Lanczos and a mild sharpen.

    Encoded as the input's format (png, jpeg or webp; others become png) unless `fmt` is given.
    Raises `ValueError` for a bad factor or format, `ImageInvalid` for bad uploads or a result
    over `MAX_PIXELS`.
    """
    if factor not in UPSCALE_FACTORS:
        raise ValueError(f"invalid upscale factor {factor!r}; expected one of 1, 2, 4")
    if fmt is not None and fmt not in IMAGE_FORMATS:
        raise ValueError(f"unsupported image format {fmt!r}; expected one of {', '.join(IMAGE_FORMATS)}")
    source = decode(image)
    if fmt is None:
        detected = image_info(image)[0]
        fmt = detected if detected in IMAGE_FORMATS else "png"
    size = (source.width * factor, source.height * factor)
    if size[0] * size[1] > MAX_PIXELS:
        raise ImageInvalid(
            f"the upscaled image would be too large (over {MAX_PIXELS // 1_000_000} megapixels)"
        )
    colour = source.convert("RGB")
    if factor > 1:
        colour = colour.resize(size, Image.Resampling.LANCZOS)
    # Sharpen the colour only: a sharpened alpha channel would grow halos.
    result = colour.filter(ImageFilter.UnsharpMask(radius=0.5 + factor / 2, percent=60, threshold=2))
    if _has_alpha(source) and fmt != "jpeg":
        alpha = source.convert("RGBA").getchannel("A")
        result.putalpha(alpha.resize(size, Image.Resampling.LANCZOS) if factor > 1 else alpha)
    return _encode(result, fmt)


def _binary(image: Image.Image, threshold: int) -> Image.Image:
    """An L image: 255 where `image` is at least `threshold`, else 0."""
    return image.point([0] * threshold + [255] * (256 - threshold))


def _fill(image: Image.Image, hole: Image.Image) -> Image.Image:
    """`image` (RGB or L) with the pixels where `hole` is 255 interpolated from the others.

    Pull: halve the image repeatedly, each pixel the average of its known children (Pillow's
    premultiplied reduce with a 0/255 alpha computes exactly that), until nothing is unknown.
    Push: from the coarsest level down, unknown pixels take the coarser level enlarged.
    """
    carrier = "RGBA" if image.mode == "RGB" else "LA"
    level = image.convert(carrier)
    level.putalpha(ImageOps.invert(hole))
    pyramid = [level]
    while max(level.size) > 1 and level.getchannel("A").getextrema()[0] == 0:
        level = level.reduce((2 if level.width > 1 else 1, 2 if level.height > 1 else 1))
        level.putalpha(_binary(level.getchannel("A"), 1))  # any known child makes it known
        pyramid.append(level)
    filled = pyramid[-1].convert(image.mode)
    for depth in range(len(pyramid) - 2, -1, -1):
        level = pyramid[depth]
        known, colours = level.getchannel("A"), level.convert(image.mode)
        filled = Image.composite(colours, filled.resize(level.size, Image.Resampling.BILINEAR), known)
        # Blocks come from the coarse levels; the full-size one is already smooth (and the costliest).
        for _ in range(_SMOOTH_PASSES if depth else 0):
            filled = Image.composite(colours, filled.filter(ImageFilter.BoxBlur(1)), known)
    return filled


def _classify(rgb: Image.Image) -> Image.Image:
    """255 where a pixel is far from the background model, the threshold set by the border's spread."""
    width, height = rgb.size
    difference = ImageChops.difference(rgb, _background_model(rgb))
    red, green, blue = difference.split()
    distance = ImageChops.add(ImageChops.add(red, green), blue)  # clips at 255, above any threshold
    strip = max(1, min(width, height) // 64)
    border = Image.new("L", rgb.size, 255)
    if width > 2 * strip and height > 2 * strip:
        ImageDraw.Draw(border).rectangle((strip, strip, width - strip - 1, height - strip - 1), fill=0)
    counts = distance.histogram(mask=border)
    # 90th percentile, so a subject touching some of the border does not inflate it.
    limit, seen, spread = 0.9 * sum(counts), 0, 255
    for value, count in enumerate(counts):
        seen += count
        if seen >= limit:
            spread = value
            break
    threshold = min(_MAX_THRESHOLD, max(_MIN_THRESHOLD, 2 * spread + 16))
    return _binary(distance, threshold + 1)


def _background_model(rgb: Image.Image) -> Image.Image:
    """The background as the border would continue it: a smooth fill of the interior, full size.

    The ring it grows from is the outermost pixels only, averaged along the edges: the subject
    rarely reaches them, while a thicker band would pick up whatever stands near the edge.
    """
    width, height = rgb.size
    scale = _MODEL_SIDE / max(width, height)
    size = (max(3, round(width * scale)), max(3, round(height * scale)))
    edge = max(1, min(width, height) // 100)
    small = Image.new("RGB", size)
    for box, strip, place in (
        ((0, 0, width, edge), (size[0], 1), (0, 0)),
        ((0, height - edge, width, height), (size[0], 1), (0, size[1] - 1)),
        ((0, 0, edge, height), (1, size[1]), (0, 0)),
        ((width - edge, 0, width, height), (1, size[1]), (size[0] - 1, 0)),
    ):
        small.paste(rgb.crop(box).resize(strip, Image.Resampling.BOX), place)
    interior = Image.new("L", size, 0)
    ImageDraw.Draw(interior).rectangle((1, 1, size[0] - 2, size[1] - 2), fill=255)
    return _fill(small, interior).resize(rgb.size, Image.Resampling.BILINEAR)


def _keep_subject(foreground: Image.Image) -> Image.Image:
    """Fill holes (background not connected to the border), then drop specks far smaller than the subject."""
    width, height = foreground.size
    background = _runs(foreground, 0)
    labels = _label(background, diagonal=False)
    touching = {
        labels[i] for i, (y, start, end) in enumerate(background) if _on_border(y, start, end, width, height)
    }
    filled = bytearray(foreground.tobytes())
    for index, (y, start, end) in enumerate(background):
        if labels[index] not in touching:
            filled[y * width + start : y * width + end] = b"\xff" * (end - start)
    subject = Image.frombytes("L", foreground.size, bytes(filled))
    parts = _runs(subject, 255)
    labels = _label(parts, diagonal=True)
    areas: dict[int, int] = {}
    for label, (_, start, end) in zip(labels, parts, strict=True):
        areas[label] = areas.get(label, 0) + end - start
    if not areas:
        return subject
    smallest = _KEEP_SHARE * max(areas.values())
    kept = bytearray(width * height)
    for label, (y, start, end) in zip(labels, parts, strict=True):
        if areas[label] >= smallest:
            kept[y * width + start : y * width + end] = b"\xff" * (end - start)
    return Image.frombytes("L", foreground.size, bytes(kept))


def _on_border(y: int, start: int, end: int, width: int, height: int) -> bool:
    return y == 0 or y == height - 1 or start == 0 or end == width


def _runs(mask: Image.Image, value: int) -> list[Run]:
    """Every horizontal run of `value` (0 or 255) in a binary L image, row by row, left to right."""
    width, data = mask.width, mask.tobytes()
    pattern = _WHITE_RUN if value else _BLACK_RUN
    runs: list[Run] = []
    for y in range(mask.height):
        offset = y * width
        runs.extend(
            (y, match.start() - offset, match.end() - offset)
            for match in pattern.finditer(data, offset, offset + width)
        )
    return runs


def _label(runs: Sequence[Run], *, diagonal: bool) -> list[int]:
    """A component label per run (in `_runs` order): union-find over overlapping runs of adjacent rows."""
    parent = list(range(len(runs)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]  # path halving keeps the trees flat
            index = parent[index]
        return index

    reach = 1 if diagonal else 0  # 8-connected runs may touch corner to corner
    bounds: dict[int, tuple[int, int]] = {}  # row → (first run, one past its last run)
    for index, (y, _, _) in enumerate(runs):
        bounds[y] = (bounds.get(y, (index, index))[0], index + 1)
    for y, (first, stop) in bounds.items():
        if y - 1 not in bounds:
            continue
        above, above_stop = bounds[y - 1]
        current = first
        while above < above_stop and current < stop:
            _, top_start, top_end = runs[above]
            _, start, end = runs[current]
            if top_start < end + reach and start < top_end + reach:
                parent[root(above)] = root(current)
            if top_end < end:
                above += 1
            else:
                current += 1
    return [root(index) for index in range(len(runs))]


def _mask_area(data: bytes, size: tuple[int, int]) -> Image.Image:
    """The area a PicWish mask marks: opaque pixels if it has transparency, else non-black ones."""
    mask = decode(data, "mask")
    alpha = mask.convert("RGBA").getchannel("A") if _has_alpha(mask) else None
    if alpha is not None and any(alpha.histogram()[:128]):  # some pixels are transparent
        area = _binary(alpha, 128)
    else:
        red, green, blue = mask.convert("RGB").split()
        area = _binary(ImageChops.lighter(ImageChops.lighter(red, green), blue), _NON_BLACK + 1)
    return area if area.size == size else area.resize(size, Image.Resampling.NEAREST)


def _rectangle_area(rectangles: Sequence[Sequence[int]], size: tuple[int, int]) -> Image.Image:
    """The union of (x, y, width, height) rectangles clipped to the image, as a 0/255 L image."""
    area = Image.new("L", size, 0)
    draw = ImageDraw.Draw(area)
    for rectangle in rectangles:
        try:
            x, y, width, height = (int(value) for value in rectangle)
        except (TypeError, ValueError) as exc:
            raise ImageInvalid(f"invalid rectangle {rectangle!r}: expected (x, y, width, height)") from exc
        left, top = max(0, x), max(0, y)
        right, bottom = min(size[0], x + width), min(size[1], y + height)
        if right > left and bottom > top:
            draw.rectangle((left, top, right - 1, bottom - 1), fill=255)
    return area
