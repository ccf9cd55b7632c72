"""A checked music submit (`shapes/music.py`) as the fields the task stores and the upstream
gets, and the one check a declaration cannot make: whether `notify_hook` may be called (the
SSRF guard, with `tasks.allow_private_webhooks`)."""

from __future__ import annotations

from typing import Any

from unigate.errors import InvalidRequest
from unigate.shapes.music import LyricsSubmitRequest, MusicSubmitRequest
from unigate.webhooks.ssrf import UnsafeURL, check_url, refusal


def notify_hook(hook: str | None, allow_private: bool) -> str:
    hook = (hook or "").strip()
    if hook:
        try:
            check_url(hook, allow_private=allow_private)
        except UnsafeURL as exc:
            message = f"Invalid 'notify_hook': refused: {refusal(exc)}."
            raise InvalidRequest(message, param="notify_hook", code="invalid_request") from None
    return hook


def music_fields(checked: MusicSubmitRequest) -> dict[str, Any]:
    """The fields of `POST /<music>/submit/music`, absent text as ""."""
    fields: dict[str, Any] = {
        name: getattr(checked, name) or ""
        for name in ("prompt", "title", "tags", "task", "gpt_description_prompt", "mv")
    }
    fields.update(
        continue_at=checked.continue_at,
        continue_clip_id=(checked.continue_clip_id or "").lower(),  # ids are stored lower-case
        make_instrumental=checked.make_instrumental,
    )
    return fields


def lyrics_fields(checked: LyricsSubmitRequest) -> dict[str, Any]:
    return {"prompt": checked.prompt, "mv": checked.mv or ""}
