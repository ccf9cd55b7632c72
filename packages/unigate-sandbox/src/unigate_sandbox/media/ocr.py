"""Recognise the text in an image with the Tesseract command line, for the sandbox's document OCR.

The upload is decoded by Pillow first (so a non-image fails as `ImageInvalid`, not as a
Tesseract error), flattened onto white, enlarged when small (Tesseract reads small print
badly) and piped to `tesseract` as a PNG: no temporary files, no shell. The result is plain
text or a searchable PDF. Synchronous and stateless, so it can run in worker threads.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from collections.abc import Mapping
from types import MappingProxyType

from PIL import Image

from unigate_sandbox.media.images import _has_alpha
from unigate_sandbox.media.visual import decode

OCR_FORMATS = ("txt", "pdf")
_TIMEOUT = 60.0  # seconds for one recognition
_SMALL_HEIGHT = 1000  # images shorter than this are enlarged 2x first
_MAX_SIDE = 32_000  # Tesseract refuses sides over 32767 pixels
_DIGITS = "0123456789.,+-/:"
_INSTALL_HINT = "install Tesseract: apt-get install tesseract-ocr"
# PicWish document-OCR language names → Tesseract traineddata names.
_LANGUAGES: Mapping[str, str] = MappingProxyType(
    {
        "english": "eng",
        "digits": "eng",  # digits only: English data with a character whitelist
        "chineseprc": "chi_sim",
        "chinesetaiwan": "chi_tra",
        "japanese": "jpn",
        "korean": "kor",
        "french": "fra",
        "german": "deu",
        "spanish": "spa",
        "italian": "ita",
        "portuguese": "por",
        "portuguesebrazilian": "por",
        "dutch": "nld",
        "russian": "rus",
        "ukrainian": "ukr",
        "polish": "pol",
        "czech": "ces",
        "slovak": "slk",
        "slovenian": "slv",
        "croatian": "hrv",
        "serbian": "srp",
        "hungarian": "hun",
        "romanian": "ron",
        "bulgarian": "bul",
        "greek": "ell",
        "turkish": "tur",
        "swedish": "swe",
        "danish": "dan",
        "norwegian": "nor",
        "norwegianbokmal": "nor",
        "finnish": "fin",
        "estonian": "est",
        "latvian": "lav",
        "lithuanian": "lit",
        "catalan": "cat",
        "latin": "lat",
        "arabic": "ara",
        "hebrew": "heb",
        "hindi": "hin",
        "thai": "tha",
        "vietnamese": "vie",
        "indonesian": "ind",
        "malay": "msa",
    }
)


class OcrUnavailable(RuntimeError):
    """Tesseract is not installed (or failed to run); the message says how to fix it."""


def ocr(image: bytes, *, fmt: str = "txt", languages: list[str] | None = None) -> bytes:
    """The text in `image`: UTF-8 text for fmt "txt", a searchable PDF for fmt "pdf".

    `languages` are PicWish names ("English", "ChinesePRC", "Digits", ...) or Tesseract codes;
    those without installed data are skipped, English when none is left. Raises `ValueError`
    for another fmt, `ImageInvalid` for a non-image, `OcrUnavailable` without Tesseract and
    `TimeoutError` when recognition takes over a minute.
    """
    if fmt not in OCR_FORMATS:
        raise ValueError(f"unsupported OCR format {fmt!r}; expected one of {', '.join(OCR_FORMATS)}")
    page = _prepare(decode(image))
    executable = shutil.which("tesseract")
    if executable is None:
        raise OcrUnavailable(f"OCR needs the tesseract command, which is not installed; {_INSTALL_HINT}")
    codes, digits_only = _tesseract_languages(executable, languages or [])
    command = [executable, "stdin", "stdout", "-l", "+".join(codes)]
    if digits_only:
        command += ["-c", f"tessedit_char_whitelist={_DIGITS}"]
    if fmt == "pdf":
        command.append("pdf")  # a config file name: must come after the options
    output = _run(command, page)
    if fmt == "pdf":
        return output
    text = output.decode("utf-8", errors="replace").rstrip("\f\r\n\t ")  # drop the page-end form feed
    return (text + "\n").encode() if text else b""


def _prepare(picture: Image.Image) -> bytes:
    """A PNG Tesseract reads well: greyscale, transparency flattened onto white, small pages enlarged."""
    if _has_alpha(picture):
        rgba = picture.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        flat.alpha_composite(rgba)  # dark text on a transparent page must not vanish into black
        picture = flat
    grey = picture.convert("L")
    scale = 2 if grey.height < _SMALL_HEIGHT and 2 * max(grey.size) <= _MAX_SIDE else 1
    if scale > 1:
        grey = grey.resize((grey.width * scale, grey.height * scale), Image.Resampling.LANCZOS)
    options: dict[str, object] = {}
    dpi = picture.info.get("dpi")
    if isinstance(dpi, tuple) and len(dpi) == 2 and all(isinstance(v, int | float) and v > 0 for v in dpi):
        # Keep the PDF page at the original's physical size after enlarging.
        options["dpi"] = (round(dpi[0] * scale), round(dpi[1] * scale))
    out = io.BytesIO()
    grey.save(out, "PNG", **options)
    return out.getvalue()


def _tesseract_languages(executable: str, requested: list[str]) -> tuple[list[str], bool]:
    """(installed Tesseract codes for `requested`, whether only digits were asked for); ["eng"] at worst."""
    if not requested:
        return ["eng"], False
    wanted: list[str] = []
    for name in requested:
        code = _LANGUAGES.get(name.strip().lower().replace(" ", "").replace("_", ""), name.strip())
        if code not in wanted:
            wanted.append(code)
    installed = _installed_languages(executable)
    codes = [code for code in wanted if code in installed]
    digits_only = all(name.strip().lower() == "digits" for name in requested)
    return codes or ["eng"], digits_only


def _installed_languages(executable: str) -> set[str]:
    """The traineddata names `tesseract --list-langs` reports (the first line is a header)."""
    try:
        listed = subprocess.run(
            [executable, "--list-langs"], capture_output=True, timeout=_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    lines = listed.stdout.decode("utf-8", errors="replace").splitlines()
    return {line.strip() for line in lines[1:] if line.strip()}


def _run(command: list[str], page: bytes) -> bytes:
    # One thread per process: Tesseract's OpenMP threads would oversubscribe the worker pool.
    environment = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        result = subprocess.run(
            command, input=page, capture_output=True, timeout=_TIMEOUT, check=False, env=environment
        )
    except FileNotFoundError as exc:
        raise OcrUnavailable(f"the tesseract command is missing; {_INSTALL_HINT}") from exc
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"text recognition took longer than {_TIMEOUT:.0f} s") from exc
    if result.returncode != 0:
        detail = result.stderr.decode("utf-8", errors="replace").strip().splitlines()
        last = detail[-1] if detail else "no message"
        raise OcrUnavailable(
            f"tesseract failed (exit {result.returncode}): {last}; "
            f"{_INSTALL_HINT} tesseract-ocr-eng (and the tesseract-ocr-* package of each language)"
        )
    return result.stdout
