"""The Files API's upload form (`POST /v1/files`, `api/openai/files.py`): its text fields. The
file part itself is streamed to the file store while the form arrives, never checked as a
whole value, so the declaration holds the fields and its schema gains the part by a patch.

`expires_after` is an object, as OpenAI describes the form; clients send its members as the
fields `expires_after[anchor]` and `expires_after[seconds]` (`form_fields` gathers them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from msgspec import Meta

from unigate.files.model import MAX_EXPIRY, MIN_EXPIRY, UPLOAD_PURPOSES
from unigate.shapes.declare import Body, Shape

if TYPE_CHECKING:
    Purpose = str
else:  # the purposes a client may upload with, from their one list
    Purpose = Literal[UPLOAD_PURPOSES]


class ExpiresAfter(Body):
    """When the file expires: `seconds` after its creation (the only anchor)."""

    anchor: Literal["created_at"]
    seconds: Annotated[int, Meta(ge=MIN_EXPIRY, le=MAX_EXPIRY, description="1 hour to 30 days.")]


class FileUpload(Body):
    """A file upload: `file` (the bytes, with a filename) and its purpose."""

    purpose: Annotated[Purpose, Meta(description="What the file is for; batch for the Batch API.")]
    expires_after: Annotated[
        ExpiresAfter | None,
        Meta(description="Sent as expires_after[anchor] and expires_after[seconds]. Default: 30 days "
             "for batch files, files.retention_days for the others (0: kept until deleted)."),
    ] = None  # fmt: skip


def form_fields(sent: Mapping[str, str]) -> dict[str, Any]:
    """The form's text fields as the declaration reads them: an empty field is its default, and
    `expires_after[...]` members gather into one object (seconds from their decimal text)."""
    out: dict[str, Any] = {}
    policy: dict[str, Any] = {}
    for name, value in sent.items():
        if value == "":
            continue
        if name.startswith("expires_after[") and name.endswith("]"):
            member = name[len("expires_after[") : -1]
            policy[member] = (
                int(value) if member == "seconds" and value.isascii() and value.isdigit() else value
            )
        else:
            out[name] = value
    if policy:
        out["expires_after"] = policy
    return out


def _with_file_part(schema: dict[str, Any]) -> None:
    schema["properties"] = {
        "file": {"type": "string", "format": "binary", "description": "The file, with its name."},
        **schema["properties"],
    }
    schema["required"] = ["file", *schema.get("required", [])]


UPLOAD = Shape(FileUpload, patch=_with_file_part, lax=True)
