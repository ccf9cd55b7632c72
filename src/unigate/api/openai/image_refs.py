"""`POST /v1/images/edits` with a JSON body, as OpenAI documents it beside the multipart form:
`images` (1-16) and an optional `mask`, each `{"image_url": ...}` or `{"file_id": ...}`, and the
same other fields. The images are read here (a base64 data URL decoded, an http(s) URL fetched
through the gateway's SSRF guard) and the call becomes the form a multipart edit is, so it is
validated, routed and relayed exactly like one and every upstream gets the shape it takes."""

from __future__ import annotations

import tempfile
from typing import Any

from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import SPOOL_BYTES, Form, UploadedFile
from unigate.errors import InvalidRequest
from unigate.providers.base import UrlFetcher
from unigate.webhooks.fetch import read_input

_FILES_API = (
    "This gateway does not serve OpenAI's Files API, so a `file_id` names nothing here: send the "
    "image as `image_url` (a base64 data URL or an http(s) URL), or upload it as a multipart file."
)


def _ref_url(ref: Any, param: str) -> str:
    """The `image_url` of one image reference (exactly one of `image_url` and `file_id`)."""
    if type(ref) is not dict:
        raise InvalidRequest(
            f"Invalid type for '{param}': expected an object with 'image_url' or 'file_id'.",
            param=param,
            code="invalid_type",
        )
    unknown = sorted(set(ref) - {"image_url", "file_id"})
    if unknown:
        raise InvalidRequest(
            f"Unknown parameter: '{param}.{unknown[0]}'.", param=param, code="unknown_parameter"
        )
    if ("image_url" in ref) == ("file_id" in ref):
        raise InvalidRequest(
            f"'{param}' must have exactly one of 'image_url' and 'file_id'.",
            param=param,
            code="invalid_value",
        )
    if "file_id" in ref:
        raise InvalidRequest(_FILES_API, param=f"{param}.file_id", code="unsupported_parameter")
    url = ref["image_url"]
    if type(url) is not str or not url:
        raise InvalidRequest(
            f"Invalid type for '{param}.image_url': expected a URL string.", param=param, code="invalid_type"
        )
    return url


async def json_edit_form(
    payload: dict[str, Any], fetch: UrlFetcher | None, max_file: int, max_images: int
) -> Form:
    """The form a multipart edit with these images, mask and fields would have been (the
    caller owns it: `close()` it). 400 for a malformed reference, a `file_id`, a refused or
    failed fetch; 413 for an image over `max_file` bytes."""
    images = payload.get("images")
    if images is None:
        raise InvalidRequest(
            "Missing required parameter: 'images'.", param="images", code="missing_required_parameter"
        )
    if type(images) is not list or not images:
        raise InvalidRequest(
            "Invalid value for 'images': expected an array of 1 or more image references.",
            param="images",
            code="invalid_value",
        )
    if len(images) > max_images:
        raise InvalidRequest(f"At most {max_images} images.", param="images", code="invalid_value")
    refs = [(f"images[{i}]", _ref_url(ref, f"images[{i}]")) for i, ref in enumerate(images)]
    if payload.get("mask") is not None:
        refs.append(("mask", _ref_url(payload["mask"], "mask")))
    form = Form()
    try:
        for name, value in payload.items():
            if name not in ("images", "mask") and value is not None:
                _add_field(form, name, value)
        several = len(images) > 1
        for param, url in refs:
            data = await read_input(fetch, url, max_file, f"{param}.image_url")
            field = "mask" if param == "mask" else "image[]" if several else "image"
            _add_file(form, field, param, data)
    except BaseException:
        form.close()
        raise
    return form


def _add_field(form: Form, name: str, value: Any) -> None:
    """A JSON field as the text a form carries (`true`, `2`); objects and arrays are refused,
    as no edit field is one."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float | str):
        text = str(value)
    else:
        raise InvalidRequest(
            f"Invalid type for '{name}': expected a string, number or boolean.",
            param=name,
            code="invalid_type",
        )
    form.fields.setdefault(name, []).append(text)
    form.parts.append((name, text))


def _add_file(form: Form, field: str, param: str, data: bytes) -> None:
    kind = sniff_image(data[:16]) or "bin"
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the form owns it
    spool.write(data)
    spool.seek(0)
    # Named after its place in the JSON body, which is what an error about it should name.
    upload = UploadedFile(param, f"{param}.{kind}", f"image/{kind}", spool, len(data))
    form.files.setdefault(field.removesuffix("[]"), []).append(upload)
    form.parts.append((field, upload))
