"""`POST /v1/images/edits` with a JSON body, as OpenAI documents it beside the multipart form:
`images` (1-16) and an optional `mask`, each `{"image_url": ...}` or `{"file_id": ...}`, and the
same other fields (declared in `shapes/images.py`). The images are read here (a base64 data URL
decoded, an http(s) URL fetched through the gateway's SSRF guard) and the call becomes the form a
multipart edit is, so it is validated, routed and relayed exactly like one and every upstream
gets the shape it takes."""

from __future__ import annotations

import tempfile
from typing import Any

from unigate.edge.media_types import sniff_image
from unigate.edge.multipart import SPOOL_BYTES, Form, UploadedFile
from unigate.errors import InvalidRequest
from unigate.providers.base import UrlFetcher
from unigate.shapes.images import ImageEditJsonRequest, ImageReference
from unigate.webhooks.fetch import read_input

_FILES_API = (
    "This gateway does not serve OpenAI's Files API, so a `file_id` names nothing here: send the "
    "image as `image_url` (a base64 data URL or an http(s) URL), or upload it as a multipart file."
)


def _ref_url(ref: ImageReference, param: str) -> str:
    """The `image_url` of one checked reference: a `file_id` names nothing on this gateway."""
    if ref.file_id is not None:
        raise InvalidRequest(_FILES_API, param=f"{param}.file_id", code="unsupported_parameter")
    assert ref.image_url is not None  # the declaration holds exactly one of the two
    return ref.image_url


async def json_edit_form(
    payload: dict[str, Any], checked: ImageEditJsonRequest, fetch: UrlFetcher | None, max_file: int
) -> Form:
    """The form a multipart edit with these images, mask and fields would have been (the
    caller owns it: `close()` it). 400 for a `file_id`, a refused or failed fetch; 413 for an
    image over `max_file` bytes. `checked` is `payload` checked against its declaration."""
    refs = [(f"images[{i}]", _ref_url(ref, f"images[{i}]")) for i, ref in enumerate(checked.images)]
    if checked.mask is not None:
        refs.append(("mask", _ref_url(checked.mask, "mask")))
    form = Form()
    try:
        for name, value in payload.items():
            if name not in ("images", "mask") and value is not None:
                add_field(form, name, value)
        several = len(refs) - (checked.mask is not None) > 1
        for param, url in refs:
            data = await read_input(fetch, url, max_file, f"{param}.image_url")
            field = "mask" if param == "mask" else "image[]" if several else "image"
            add_file(form, field, param, data)
    except BaseException:
        form.close()
        raise
    return form


def add_field(form: Form, name: str, value: Any) -> None:
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


def add_file(form: Form, field: str, param: str, data: bytes) -> None:
    """An image as the file part `field` of a multipart edit would be (`param`: where the
    request carried it, which an error about it names)."""
    kind = sniff_image(data[:16]) or "bin"
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the form owns it
    spool.write(data)
    spool.seek(0)
    # Named after its place in the JSON body, which is what an error about it should name.
    upload = UploadedFile(param, f"{param}.{kind}", f"image/{kind}", spool, len(data))
    form.files.setdefault(field.removesuffix("[]"), []).append(upload)
    form.parts.append((field, upload))
