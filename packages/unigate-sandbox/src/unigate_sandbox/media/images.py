"""Generate and edit images for the sandbox image endpoints, with Pillow.

Images are real and derived from the request: a palette and layout hashed from the prompt
(and seed), the prompt's start drawn as text. Edits visibly transform the upload (mirror,
posterize, tint) and honour OpenAI's mask semantics. Everything is deterministic: the same
request gives the same bytes. Uploads are untrusted, so decoding is guarded against
decompression bombs and any decoder failure becomes `ImageInvalid`.
"""

from __future__ import annotations

import colorsys
import hashlib
import io
import random
import re
from collections.abc import Mapping
from types import MappingProxyType

from PIL import Image, ImageDraw, ImageFont, ImageOps

IMAGE_FORMATS = ("png", "jpeg", "webp")
IMAGE_CONTENT_TYPES: dict[str, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
MAX_PIXELS = 50_000_000  # refuse anything bigger: a small upload can decode to gigabytes
# Images the sandbox draws: no side beyond OpenAI's largest (1792, dall-e-3's 1792x1024).
_MIN_SIDE, _MAX_SIDE = 64, 1792
# Images to edit: at most 16 megapixels each (a 4096x4096 upload decodes to 64 MB RGBA).
MAX_EDIT_PIXELS = 4096 * 4096
_SIZE = re.compile(r"\s*(\d{1,6})\s*[xX\u00d7]\s*(\d{1,6})\s*")
_TEXT_CHARS = 40  # how much of the prompt is drawn on the image
# Stability's aspect ratios at ~1 megapixel, sides multiples of 64 (the sizes SDXL/SD3 use).
_ASPECTS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "1:1": (1024, 1024),
        "16:9": (1344, 768),
        "9:16": (768, 1344),
        "21:9": (1536, 640),
        "9:21": (640, 1536),
        "3:2": (1216, 832),
        "2:3": (832, 1216),
        "5:4": (1088, 896),
        "4:5": (896, 1088),
    }
)
_SHAPES: Mapping[str, int] = MappingProxyType({"low": 4, "high": 12, "hd": 12})  # default 7
_SATURATION: Mapping[str, float] = MappingProxyType({"vivid": 0.9, "natural": 0.4})  # default 0.65

Color = tuple[int, int, int]


class ImageInvalid(ValueError):
    """An upload is not a decodable image, is too large, or is an unusable mask."""


def parse_size(size: str | None, default: tuple[int, int] = (1024, 1024)) -> tuple[int, int]:
    """Parse "1024x1536" → (1024, 1536); None or "auto" → `default`.

    Raises `ValueError` (with a message for the user) when malformed or a side is not 64..4096.
    """
    if size is None or size.strip().lower() == "auto":
        return default
    match = _SIZE.fullmatch(size)
    if not match:
        raise ValueError(f"invalid size {size!r}: expected WIDTHxHEIGHT, for example 1024x1024")
    width, height = int(match[1]), int(match[2])
    if not (_MIN_SIDE <= width <= _MAX_SIDE and _MIN_SIDE <= height <= _MAX_SIDE):
        raise ValueError(
            f"invalid size {size!r}: each side must be between {_MIN_SIDE} and {_MAX_SIDE} pixels"
        )
    return width, height


def aspect_size(aspect_ratio: str | None, base: int = 1024) -> tuple[int, int]:
    """A Stability aspect ratio ("16:9", ...) → a size of about base*base pixels, sides multiples of 64."""
    key = "1:1" if aspect_ratio is None else aspect_ratio.strip()
    if key not in _ASPECTS:
        raise ValueError(f"invalid aspect_ratio {aspect_ratio!r}: expected one of {', '.join(_ASPECTS)}")
    width, height = _ASPECTS[key]
    return _snap(width * base / 1024), _snap(height * base / 1024)


def _snap(side: float) -> int:
    """The nearest multiple of 64, at least 64."""
    return max(64, round(side / 64) * 64)


def _check_format(fmt: str) -> None:
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"unsupported image format {fmt!r}; expected one of {', '.join(IMAGE_FORMATS)}")


def _check_size(size: tuple[int, int]) -> None:
    if min(size) < 1 or size[0] * size[1] > MAX_PIXELS:
        raise ValueError(f"invalid image size {size[0]}x{size[1]}")


def _palette(digest: bytes, style: str | None) -> list[Color]:
    """Five related colours: a hue from the hash, its neighbours and its complement."""
    hue = digest[0] / 255
    saturation = _SATURATION.get((style or "").lower(), 0.65)
    colors: list[Color] = []
    for index, offset in enumerate((0.0, 0.08, -0.08, 0.5, 0.42)):
        value = 0.55 + 0.4 * digest[1 + index] / 255
        red, green, blue = colorsys.hsv_to_rgb((hue + offset) % 1.0, saturation, value)
        colors.append((round(red * 255), round(green * 255), round(blue * 255)))
    return colors


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=max(8, size))


def _draw_caption(image: Image.Image, text: str, top: bool) -> None:
    """Draw `text` in a dark band, shrinking the font until it fits the width."""
    text = " ".join(text.split())[:_TEXT_CHARS]
    if not text:
        return
    width, height = image.size
    margin = max(2, min(width, height) // 40)
    size = max(8, min(width, height) // 18)
    draw = ImageDraw.Draw(image, "RGBA")
    font = _font(size)
    box = draw.textbbox((0, 0), text, font=font)
    while size > 8 and box[2] - box[0] > width - 4 * margin:  # shrink to fit
        size = max(8, size * 4 // 5)
        font = _font(size)
        box = draw.textbbox((0, 0), text, font=font)
    x = 2 * margin
    y = 2 * margin if top else height - 2 * margin - (box[3] - box[1])
    band = (x - margin, y - margin, x + box[2] - box[0] + margin, y + box[3] - box[1] + margin)
    draw.rectangle(band, fill=(0, 0, 0, 150))
    draw.text((x - box[0], y - box[1]), text, font=font, fill=(255, 255, 255, 255))


def _encode(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    if fmt == "jpeg":
        image.convert("RGB").save(out, "JPEG", quality=90)
    elif fmt == "webp":
        image.save(out, "WEBP", quality=90, method=4)
    else:
        image.save(out, "PNG")
    return out.getvalue()


def generate_image(
    prompt: str,
    size: tuple[int, int],
    fmt: str = "png",
    seed: int = 0,
    quality: str | None = None,
    style: str | None = None,
    background: str | None = None,
) -> bytes:
    """A deterministic picture for `prompt` (+ `seed`), encoded as `fmt` (JPEG at quality 90).

    Gradient background, shapes placed by hash, the prompt's start as a caption. A
    "transparent" background gives RGBA (PNG/WebP only: `ValueError` with JPEG).
    """
    _check_format(fmt)
    _check_size(size)
    transparent = (background or "").lower() == "transparent"
    if transparent and fmt == "jpeg":
        raise ValueError("a transparent background needs the png or webp output format")
    digest = hashlib.sha256(f"{seed}\x1f{prompt}".encode()).digest()
    rng = random.Random(int.from_bytes(digest, "big"))
    colors = _palette(digest, style)
    width, height = size
    if transparent:
        image = Image.new("RGBA", size, (0, 0, 0, 0))
    else:
        ramp = Image.radial_gradient("L") if digest[6] % 3 == 2 else Image.linear_gradient("L")
        if digest[6] % 3 == 1:
            ramp = ramp.transpose(Image.Transpose.ROTATE_90)
        ramp = ramp.resize(size, Image.Resampling.BILINEAR)
        image = Image.composite(Image.new("RGBA", size, colors[3]), Image.new("RGBA", size, colors[0]), ramp)
    layer = Image.new("RGBA", size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    shortest = min(width, height)
    for index in range(_SHAPES.get((quality or "").lower(), 7)):
        # Centres stay in the middle 60% and radii under 18% of the short side: corners stay
        # background, so a transparent image always keeps fully transparent pixels.
        cx, cy = rng.uniform(0.2, 0.8) * width, rng.uniform(0.2, 0.8) * height
        radius = rng.uniform(0.05, 0.18) * shortest
        fill = (*colors[(index + 1) % len(colors)], rng.randrange(170, 240))
        bounds = (cx - radius, cy - radius, cx + radius, cy + radius)
        if rng.random() < 0.5:
            draw.ellipse(bounds, fill=fill)
        else:
            draw.rounded_rectangle(bounds, radius=radius * rng.uniform(0, 0.4), fill=fill)
    image = Image.alpha_composite(image, layer)
    _draw_caption(image, prompt, top=False)
    return _encode(image if transparent else image.convert("RGB"), fmt)


def _open(data: bytes, what: str) -> Image.Image:
    """Decode an untrusted upload (first frame, EXIF orientation applied) or raise `ImageInvalid`."""
    try:
        image = Image.open(io.BytesIO(data))
        if image.width * image.height > MAX_PIXELS:
            raise ImageInvalid(f"the {what} is too large (over {MAX_PIXELS // 1_000_000} megapixels)")
        image.load()
        transposed = ImageOps.exif_transpose(image)
    except ImageInvalid:
        raise
    except Exception as exc:  # Pillow raises many types on hostile input; all mean "not an image"
        raise ImageInvalid(f"the {what} is not a valid image") from exc
    return transposed if transposed is not None else image


def _has_alpha(image: Image.Image) -> bool:
    return "A" in image.getbands() or "transparency" in image.info


def edit_image(
    images: list[bytes], prompt: str, mask: bytes | None, size: tuple[int, int] | None, fmt: str = "png"
) -> bytes:
    """Visibly edit the first image: mirror, posterize, a prompt-coloured tint and the prompt as text.

    Further images appear as thumbnails along the bottom. With a mask (an image with an alpha
    channel, resized to the output), only pixels where the mask is fully transparent change.
    Output at `size`, else the first image's size. Raises `ImageInvalid` for bad uploads.
    """
    _check_format(fmt)
    if not images:
        raise ImageInvalid("no image to edit")
    for data in images[:9]:
        check_edit_input(data, "image")
    source = _open(images[0], "image")
    keep_alpha = _has_alpha(source) and fmt != "jpeg"
    target = size or fit_within(source.size, _MAX_SIDE)
    _check_size(target)
    original = source.convert("RGBA")
    if original.size != target:
        original = original.resize(target, Image.Resampling.LANCZOS)
    digest = hashlib.sha256(prompt.encode()).digest()
    tint = _palette(digest, "vivid")[0]
    edited_rgb = ImageOps.posterize(ImageOps.mirror(original.convert("RGB")), 3)
    edited_rgb = Image.blend(edited_rgb, Image.new("RGB", target, tint), 0.35)
    edited = edited_rgb.convert("RGBA")
    edited.putalpha(ImageOps.mirror(original.getchannel("A")))
    thumb_box = (max(1, target[0] // 6), max(1, target[1] // 6))
    margin = max(2, min(target) // 40)
    x = margin
    for extra in images[1:9]:  # a handful of thumbnails at most
        thumb = _open(extra, "image").convert("RGBA")
        thumb.thumbnail(thumb_box)
        if x + thumb.width > target[0]:
            break
        edited.alpha_composite(thumb, (x, target[1] - margin - thumb.height))
        x += thumb.width + margin
    _draw_caption(edited, prompt, top=True)
    if mask is not None:
        check_edit_input(mask, "mask")
        mask_image = _open(mask, "mask")
        if not _has_alpha(mask_image):
            raise ImageInvalid("the mask must have an alpha channel (a PNG with transparency)")
        alpha = mask_image.convert("RGBA").getchannel("A").resize(target, Image.Resampling.NEAREST)
        keep = alpha.point([0] + [255] * 255)  # opaque or partly opaque mask pixels keep the original
        edited = Image.composite(original, edited, keep)
    return _encode(edited if keep_alpha else edited.convert("RGB"), fmt)


def check_edit_input(data: bytes, what: str) -> None:
    """Refuse an upload to edit over `MAX_EDIT_PIXELS` from its header, before decoding."""
    _, width, height = image_info(data)
    if width * height > MAX_EDIT_PIXELS:
        raise ImageInvalid(
            f"the {what} is too large ({width}x{height}); images to edit may have at most "
            f"{MAX_EDIT_PIXELS // 1_000_000} megapixels"
        )


def fit_within(size: tuple[int, int], side: int) -> tuple[int, int]:
    """`size` scaled down (aspect kept) so that no side exceeds `side`; unchanged if it fits."""
    width, height = size
    scale = side / max(width, height)
    if scale >= 1:
        return size
    return max(1, round(width * scale)), max(1, round(height * scale))


def image_info(data: bytes) -> tuple[str, int, int]:
    """(format, width, height) of an image, e.g. ("png", 1024, 1024); `ImageInvalid` when not an image."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt, width, height = (image.format or "").lower(), image.width, image.height
    except Exception as exc:  # header parsing only, but still hostile input
        raise ImageInvalid("not a valid image") from exc
    if not fmt:
        raise ImageInvalid("not a valid image")
    return ("jpeg" if fmt == "mpo" else fmt), width, height
