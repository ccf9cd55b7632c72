"""The sandbox's visual and document tools, as PicWish runs them: segmentation (a cutout
with a real alpha channel, and its mask), inpaint (fills what a mask or rectangles cover,
leaving every other pixel alone), scale (exactly 1, 2 or 4 times the size) and OCR (the
image's text as txt or a searchable pdf, through Tesseract), as `/media/` files.

The image (and inpaint's mask) is an upload or a URL fetched at submit through the SSRF
guard; anything that is not a PNG, JPEG or WebP image is a 400 then. An image that only
fails to decode fails the task with the decoder's reason.
"""

from __future__ import annotations

import io
from typing import Any

import orjson

from unigate.edge.media_types import sniff_image
from unigate.errors import InvalidRequest
from unigate.providers.base import TaskSubmission
from unigate_sandbox.tasks import InputStore, Rendered

MAX_IMAGE = 20 * 1024 * 1024
VISUAL_TOOLS = ("segmentation", "inpaint", "scale")
SANDBOX_OCR_FORMATS = ("txt", "pdf")
_EXTENSIONS = {"png": "png", "jpeg": "jpg", "webp": "webp"}
_CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}


async def _image(job: TaskSubmission, inputs: InputStore, file_name: str, url_name: str) -> bytes | None:
    """An image input: the upload `file_name` or the URL field `url_name`; None if neither."""
    upload = job.files.get(file_name)
    if upload is not None:
        data = upload.data
    elif job.fields.get(url_name):
        data = await inputs.fetch(str(job.fields[url_name]), MAX_IMAGE, url_name)
    else:
        return None
    if sniff_image(data[:16]) not in _EXTENSIONS:
        param = file_name if upload is not None else url_name
        raise InvalidRequest(
            f"The '{param}' input is not a PNG, JPEG or WebP image.", param=param, code="invalid_image_format"
        )
    return data


async def _source(job: TaskSubmission, inputs: InputStore) -> dict[str, str]:
    """The job's stored image, which is required, as the record's `files`."""
    data = await _image(job, inputs, "image_file", "image_url")
    if data is None:
        raise InvalidRequest("Give 'image_file' or 'image_url'.", param="image_file", code="invalid_request")
    return {"image": await inputs.save("image", data)}


class VisualKind:
    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        tool = job.action.partition("/")[2]
        if tool not in VISUAL_TOOLS:
            raise InvalidRequest(
                f"The sandbox has no visual tool '{tool}'.", code="unsupported_operation", status=404
            )
        fields = job.fields
        prepared: dict[str, Any] = {"tool": tool, "files": await _source(job, inputs)}
        if tool == "inpaint":
            mask = await _image(job, inputs, "mask_file", "mask_url")
            if mask is not None:
                prepared["files"]["mask"] = await inputs.save("mask", mask)
            elif fields.get("rectangles"):
                boxes = orjson.loads(str(fields["rectangles"]))
                prepared["rectangles"] = [[b["x"], b["y"], b["width"], b["height"]] for b in boxes]
            else:
                raise InvalidRequest("inpaint needs a mask or rectangles.", param="rectangles")
        elif tool == "scale":
            factor = str(fields.get("scale_factor") or "2")
            if factor not in ("1", "2", "4"):
                raise InvalidRequest("'scale_factor' must be 1, 2 or 4.", param="scale_factor")
            prepared["factor"] = int(factor)
        else:
            prepared.update(
                {
                    "output_type": str(fields.get("output_type") or "2"),
                    "crop": str(fields.get("crop") or "0") == "1",
                    "format": str(fields.get("format") or "png"),
                    "bg_color": str(fields.get("bg_color") or ""),
                }
            )
        return prepared

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        from unigate_sandbox.media.visual import inpaint, upscale

        p = record["prepared"]
        image = files["image"]
        if p["tool"] == "segmentation":
            return _segmentation(job_id, image, p)
        if p["tool"] == "inpaint":
            if "mask" in files:
                result = inpaint(image, mask=files["mask"])
            else:
                result = inpaint(image, rectangles=[(x, y, w, h) for x, y, w, h in p["rectangles"]])
            ext = "png"
        else:
            result = upscale(image, int(p["factor"]))
            ext = _EXTENSIONS.get(sniff_image(result[:16]) or "", "png")
        out = Rendered([])
        out.outputs.append(
            {"id": job_id, "url": out.add(f"{job_id}.{ext}", result), "content_type": _CONTENT_TYPES[ext]}
        )
        return out


def _segmentation(job_id: str, image: bytes, p: dict[str, Any]) -> Rendered:
    """Cutout and mask, cropped to the subject and flattened onto a colour when asked."""
    from PIL import Image

    from unigate_sandbox.media.visual import segment

    cutout_png, mask_png = segment(image)
    cutout: Image.Image = Image.open(io.BytesIO(cutout_png))
    mask: Image.Image = Image.open(io.BytesIO(mask_png))
    if p["crop"]:
        box = mask.getbbox()
        if box is not None:
            cutout, mask = cutout.crop(box), mask.crop(box)
    ext = "jpg" if p["format"] == "jpg" else "png"
    color = p["bg_color"] or ("FFFFFF" if ext == "jpg" else "")
    if color:
        rgba = tuple(int(color[i : i + 2], 16) for i in range(0, len(color), 2))
        backdrop = Image.new("RGBA", cutout.size, rgba if len(rgba) == 4 else (*rgba, 255))
        cutout = Image.alpha_composite(backdrop, cutout.convert("RGBA"))
    picture = io.BytesIO()
    if ext == "jpg":
        cutout.convert("RGB").save(picture, "JPEG", quality=92)
    else:
        cutout.save(picture, "PNG")
    mask_bytes = io.BytesIO()
    mask.save(mask_bytes, "PNG")
    out = Rendered([])
    mask_url = out.add(f"{job_id}-mask.png", mask_bytes.getvalue())
    if p["output_type"] == "3":  # the mask only
        out.outputs.append({"id": job_id, "url": mask_url, "mask_url": mask_url, "content_type": "image/png"})
        return out
    item: dict[str, Any] = {
        "id": job_id,
        "url": out.add(f"{job_id}.{ext}", picture.getvalue()),
        "content_type": _CONTENT_TYPES[ext],
    }
    if p["output_type"] == "1":
        item["mask_url"] = mask_url
    out.outputs.append(item)
    return out


class DocumentKind:
    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        tool = job.action.partition("/")[2]
        if tool != "ocr":
            raise InvalidRequest(
                f"The sandbox has no document tool '{tool}'.", code="unsupported_operation", status=404
            )
        fmt = str(job.fields.get("format") or "txt")
        if fmt not in SANDBOX_OCR_FORMATS:
            raise InvalidRequest(
                f"The sandbox produces txt and pdf, not {fmt}; Office formats need a PicWish upstream.",
                param="format",
                code="invalid_value",
            )
        languages = [s for s in str(job.fields.get("language") or "").split(",") if s]
        return {"files": await _source(job, inputs), "format": fmt, "languages": languages}

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        from unigate_sandbox.media.ocr import OcrUnavailable, ocr

        p = record["prepared"]
        try:
            text = ocr(files["image"], fmt=p["format"], languages=p["languages"] or None)
        except (OcrUnavailable, TimeoutError) as exc:  # the engine fails tasks on ValueError
            raise ValueError(str(exc)) from exc
        content_type = "application/pdf" if p["format"] == "pdf" else "text/plain; charset=utf-8"
        out = Rendered([])
        out.outputs.append(
            {"id": job_id, "url": out.add(f"{job_id}.{p['format']}", text), "content_type": content_type}
        )
        return out
