"""The sandbox's visual tools: background removal, object removal, upscaling, and Tesseract OCR."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont, ImageStat

from unigate_sandbox.media.images import ImageInvalid
from unigate_sandbox.media.ocr import OcrUnavailable, ocr
from unigate_sandbox.media.visual import inpaint, segment, upscale

SIZE = (320, 240)
GREY = (128, 128, 128)
SUBJECT_BOX = (96, 60, 224, 192)  # the ellipse the segmentation must find
OCR_WORDS = ("GATEWAY", "TEST", "2026", "HELLO")


def _encode(image: Image.Image, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": 80} if fmt in ("JPEG", "WEBP") else {}))
    return out.getvalue()


def _decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def _scene(gradient: bool) -> tuple[Image.Image, Image.Image]:
    """(picture, true subject mask): a red ellipse with a background-coloured spot inside."""
    if gradient:
        ramp = Image.linear_gradient("L").transpose(Image.Transpose.ROTATE_90).resize(SIZE)
        picture = Image.merge(
            "RGB",
            (
                ramp.point(lambda v: 90 + v // 3),
                ramp.point(lambda v: 140 + v // 4),
                Image.new("L", SIZE, 210),
            ),
        )
    else:
        picture = Image.new("RGB", SIZE, (200, 220, 235))
    draw = ImageDraw.Draw(picture)
    draw.ellipse(SUBJECT_BOX, fill=(180, 40, 30))
    draw.ellipse((145, 110, 175, 140), fill=picture.getpixel((2, 2)))  # a hole: still subject
    truth = Image.new("L", SIZE, 0)
    ImageDraw.Draw(truth).ellipse(SUBJECT_BOX, fill=255)
    return picture, truth


def _iou(mask: Image.Image, truth: Image.Image) -> float:
    binary = mask.point([0] * 128 + [255] * 128)
    inter = ImageChops.darker(binary, truth).histogram()[255]
    union = ImageChops.lighter(binary, truth).histogram()[255]
    return inter / union


def _red_square() -> Image.Image:
    picture = Image.new("RGB", SIZE, GREY)
    ImageDraw.Draw(picture).rectangle((140, 100, 179, 139), fill=(230, 20, 20))
    return picture


def _area(box: tuple[int, int, int, int]) -> Image.Image:
    area = Image.new("L", SIZE, 0)
    ImageDraw.Draw(area).rectangle(box, fill=255)
    return area


def _assert_removed(result: Image.Image, original: Image.Image, area: Image.Image) -> None:
    outside = ImageChops.invert(area)
    difference = ImageChops.difference(result.convert("RGB"), original.convert("RGB"))
    assert ImageStat.Stat(difference, outside).extrema == [(0, 0)] * 3  # untouched outside
    assert ImageStat.Stat(difference, area).extrema[0][1] > 90  # the red is gone...
    inside = ImageChops.difference(result.convert("RGB"), Image.new("RGB", SIZE, GREY))
    assert max(high for _, high in ImageStat.Stat(inside, area).extrema) <= 6  # ...into grey


@pytest.mark.parametrize("gradient", [False, True], ids=["flat", "gradient"])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_segment_cuts_the_subject_out(gradient: bool, fmt: str) -> None:
    picture, truth = _scene(gradient)
    cutout_png, mask_png = segment(_encode(picture, fmt))
    cutout, mask = _decode(cutout_png), _decode(mask_png)
    assert (cutout.format, cutout.mode, cutout.size) == ("PNG", "RGBA", SIZE)
    assert (mask.format, mask.mode, mask.size) == ("PNG", "L", SIZE)
    alpha = cutout.getchannel("A")
    for corner in ((0, 0), (SIZE[0] - 1, 0), (0, SIZE[1] - 1), (SIZE[0] - 1, SIZE[1] - 1)):
        assert alpha.getpixel(corner) == 0
    assert alpha.getpixel((160, 80)) == 255
    assert alpha.getpixel((160, 125)) == 255  # the hole inside the subject is filled
    assert _iou(mask, truth) > 0.9
    histogram = alpha.histogram()
    edge = sum(histogram[1:255])
    assert 0 < edge < 0.05 * SIZE[0] * SIZE[1]  # a soft edge, only at the outline
    assert ImageChops.difference(alpha, mask).getbbox() is None


def test_segment_drops_specks_and_is_deterministic_across_threads() -> None:
    picture, truth = _scene(gradient=False)
    ImageDraw.Draw(picture).rectangle((10, 200, 19, 209), fill=(20, 20, 20))  # a speck, far from the subject
    data = _encode(picture)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(segment, [data] * 4))
    assert all(result == results[0] for result in results)
    mask = _decode(results[0][1])
    assert mask.getpixel((15, 205)) == 0
    assert _iou(mask, truth) > 0.95


def test_segment_rejects_non_images() -> None:
    with pytest.raises(ImageInvalid):
        segment(b"definitely not an image")


def test_inpaint_rectangles_remove_the_object() -> None:
    picture = _red_square()
    result = _decode(inpaint(_encode(picture), rectangles=[(134, 94, 52, 52)]))
    assert (result.format, result.mode, result.size) == ("PNG", "RGB", SIZE)
    _assert_removed(result, picture, _area((134, 94, 185, 145)))


def test_inpaint_rectangles_are_clipped_to_the_image() -> None:
    picture = Image.new("RGB", SIZE, GREY)
    ImageDraw.Draw(picture).rectangle((290, 0, 319, 30), fill=(230, 20, 20))
    result = _decode(inpaint(_encode(picture), rectangles=[(285, -10, 100, 45)]))
    _assert_removed(result, picture, _area((285, 0, 319, 34)))


def test_inpaint_with_a_mask_file() -> None:
    picture = _red_square()
    area = _area((130, 90, 189, 149))
    result = _decode(inpaint(_encode(picture, "JPEG"), mask=_encode(area)))
    original = _decode(_encode(picture, "JPEG")).convert("RGB")
    outside = ImageChops.invert(area)
    difference = ImageChops.difference(result, original)
    assert ImageStat.Stat(difference, outside).extrema == [(0, 0)] * 3  # identical to the decoded JPEG
    assert ImageStat.Stat(result, area).mean == pytest.approx(list(GREY), abs=6)


def test_inpaint_mask_of_another_size_is_resized() -> None:
    picture = _red_square()
    small = Image.new("L", (SIZE[0] // 2, SIZE[1] // 2), 0)
    ImageDraw.Draw(small).rectangle((65, 45, 94, 74), fill=255)  # (130, 90)-(189, 149) at full size
    result = _decode(inpaint(_encode(picture), mask=_encode(small)))
    _assert_removed(result, picture, _area((130, 90, 189, 149)))


def test_inpaint_transparent_mask_marks_its_opaque_pixels() -> None:
    picture = _red_square()
    mask = Image.new("RGBA", SIZE, (0, 0, 0, 0))
    ImageDraw.Draw(mask).rectangle((130, 90, 189, 149), fill=(0, 0, 0, 255))  # black, but opaque
    result = _decode(inpaint(_encode(picture), mask=_encode(mask)))
    _assert_removed(result, picture, _area((130, 90, 189, 149)))


def test_inpaint_keeps_transparency() -> None:
    picture = _red_square().convert("RGBA")
    picture.putpixel((0, 0), (0, 0, 0, 0))
    result = _decode(inpaint(_encode(picture), rectangles=[(130, 90, 60, 60)]))
    assert result.mode == "RGBA"
    assert result.getpixel((0, 0)) == (0, 0, 0, 0)
    assert result.getpixel((160, 120))[3] == 255


@pytest.mark.parametrize(
    ("mask", "rectangles"),
    [
        (None, None),
        (b"mask", [(0, 0, 10, 10)]),
        (None, [(400, 400, 10, 10)]),  # entirely outside the image
        (None, [(10, 10, 0, 5)]),
        (None, [(0, 0, 1000, 1000)]),  # everything: nothing to fill from
        (None, [(0, 0, "wide", 3)]),
    ],
)
def test_inpaint_rejects_unusable_areas(
    mask: bytes | None, rectangles: list[tuple[int, int, int, int]]
) -> None:
    with pytest.raises(ImageInvalid):
        inpaint(_encode(_red_square()), mask=mask, rectangles=rectangles)


def test_inpaint_rejects_bad_uploads() -> None:
    with pytest.raises(ImageInvalid):
        inpaint(b"not an image", rectangles=[(0, 0, 5, 5)])
    with pytest.raises(ImageInvalid):
        inpaint(_encode(_red_square()), mask=b"not a mask")
    with pytest.raises(ImageInvalid):
        inpaint(_encode(_red_square()), mask=_encode(Image.new("L", SIZE, 0)))  # all black: nothing marked


@pytest.mark.parametrize("factor", [1, 2, 4])
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
def test_upscale_exact_size_and_format(factor: int, fmt: str) -> None:
    picture, _ = _scene(gradient=True)
    result = _decode(upscale(_encode(picture.resize((150, 100)), fmt), factor))
    assert result.size == (150 * factor, 100 * factor)
    assert result.format == fmt


def test_upscale_keeps_alpha_and_honours_an_explicit_format() -> None:
    picture = Image.new("RGBA", (40, 30), (255, 0, 0, 0))
    ImageDraw.Draw(picture).rectangle((10, 10, 29, 19), fill=(255, 0, 0, 255))
    result = _decode(upscale(_encode(picture), 2))
    assert (result.mode, result.size) == ("RGBA", (80, 60))
    assert result.getpixel((0, 0))[3] == 0
    assert result.getpixel((40, 30))[3] == 255
    as_jpeg = _decode(upscale(_encode(picture), 4, fmt="jpeg"))
    assert (as_jpeg.format, as_jpeg.mode, as_jpeg.size) == ("JPEG", "RGB", (160, 120))


def test_upscale_rejects_bad_requests() -> None:
    with pytest.raises(ValueError, match="factor"):
        upscale(_encode(_red_square()), 3)
    with pytest.raises(ValueError, match="format"):
        upscale(_encode(_red_square()), 2, fmt="bmp")
    with pytest.raises(ImageInvalid):
        upscale(b"not an image", 2)
    with pytest.raises(ImageInvalid, match="too large"):
        upscale(_encode(Image.new("L", (2000, 2000), 0)), 4)  # 64 megapixels


def _text_page() -> bytes:
    page = Image.new("RGB", (900, 140), "white")
    ImageDraw.Draw(page).text(
        (30, 40), " ".join(OCR_WORDS), font=ImageFont.load_default(size=48), fill="black"
    )
    return _encode(page)


def test_ocr_reads_text() -> None:
    text = ocr(_text_page()).decode()
    for word in OCR_WORDS:
        assert word.lower() in text.lower()
    assert not text.endswith("\f")


def test_ocr_languages_fall_back_to_installed_ones() -> None:
    text = ocr(_text_page(), languages=["English", "Klingon", "ChineseTaiwan"]).decode().lower()
    assert all(word.lower() in text for word in OCR_WORDS)
    assert "2026" in ocr(_text_page(), languages=["Digits"]).decode()


def test_ocr_pdf_is_searchable_pdf() -> None:
    pdf = ocr(_text_page(), fmt="pdf")
    assert pdf.startswith(b"%PDF")
    assert b"GlyphLessFont" in pdf  # Tesseract's invisible text layer


def test_ocr_rejects_bad_input() -> None:
    with pytest.raises(ImageInvalid):
        ocr(b"%PDF-1.7 not an image")
    with pytest.raises(ValueError, match="format"):
        ocr(_text_page(), fmt="docx")


def test_ocr_without_tesseract_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OcrUnavailable, match="apt-get install tesseract-ocr"):
        ocr(_text_page())
