"""Validation of music submit bodies: types, lengths and the continuation rules. Every
violation is a 400 in the music envelope naming the field."""

from __future__ import annotations

import uuid
from typing import Any

from unigate.errors import InvalidRequest
from unigate.webhooks.ssrf import UnsafeURL, check_url, refusal

MAX_LENGTHS = {
    "prompt": 5000,
    "gpt_description_prompt": 3000,
    "title": 200,
    "tags": 1000,
    "task": 40,
    "mv": 100,
    "notify_hook": 2048,
}
MAX_CONTINUE_AT = 24 * 3600


def _bad(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid '{field}': {message}.", param=field, code="invalid_request")


def _string(payload: dict[str, Any], field: str) -> str:
    value = payload.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _bad(field, "must be a string")
    if len(value) > MAX_LENGTHS[field]:
        raise _bad(field, f"longer than {MAX_LENGTHS[field]} characters")
    if "\x00" in value:
        raise _bad(field, "contains a NUL character")
    return value


def notify_hook(payload: dict[str, Any], allow_private: bool) -> str:
    hook = _string(payload, "notify_hook").strip()
    if hook:
        try:
            check_url(hook, allow_private=allow_private)
        except UnsafeURL as exc:
            raise _bad("notify_hook", f"refused: {refusal(exc)}") from None
    return hook


def music_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The validated fields of `POST /<music>/submit/music` (spec §4.1)."""
    fields: dict[str, Any] = {
        name: _string(payload, name) for name in ("prompt", "title", "tags", "task", "gpt_description_prompt")
    }
    fields["mv"] = _string(payload, "mv")
    continue_at = payload.get("continue_at")
    if continue_at is not None and (
        isinstance(continue_at, bool)
        or not isinstance(continue_at, int)
        or not 0 <= continue_at <= MAX_CONTINUE_AT
    ):
        raise _bad("continue_at", f"must be an integer number of seconds between 0 and {MAX_CONTINUE_AT}")
    clip = payload.get("continue_clip_id")
    if clip is not None and clip != "":
        if not isinstance(clip, str) or not _is_uuid(clip):
            raise _bad("continue_clip_id", "must be a clip id in UUID form")
        clip = clip.lower()  # ids are stored in canonical (lower-case) form
    else:
        clip = ""
    if clip and continue_at is None:
        raise _bad("continue_at", "is required with continue_clip_id")
    if continue_at is not None and not clip:
        raise _bad("continue_clip_id", "is required with continue_at")
    if fields["task"] == "extend" and not clip:
        raise _bad("continue_clip_id", "is required when task is 'extend'")
    instrumental = payload.get("make_instrumental")
    if instrumental is not None and not isinstance(instrumental, bool):
        raise _bad("make_instrumental", "must be a boolean")
    if not fields["prompt"].strip() and not fields["gpt_description_prompt"].strip():
        raise InvalidRequest(
            "Either 'prompt' (lyrics) or 'gpt_description_prompt' (description mode) is required.",
            param="prompt",
            code="invalid_request",
        )
    fields.update(continue_at=continue_at, continue_clip_id=clip, make_instrumental=instrumental)
    return fields


def lyrics_fields(payload: dict[str, Any]) -> dict[str, Any]:
    prompt = _string(payload, "prompt")
    if not prompt.strip():
        raise InvalidRequest("'prompt' is required for lyrics.", param="prompt", code="prompt_empty")
    return {"prompt": prompt, "mv": _string(payload, "mv")}


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False
