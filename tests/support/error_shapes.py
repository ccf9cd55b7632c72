"""The error body each family's clients parse (src/unigate/errors.py renders them): a check
that names what is wrong with a body, or None when it has the family's shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _openai(body: Any) -> bool:
    err = body.get("error") if set(body) == {"error"} else None
    return isinstance(err, dict) and {"message", "type", "param", "code"} <= set(err)


def _music(body: Any) -> bool:
    return set(body) == {"code", "message", "data"} and body["data"] is None and body["code"] != "success"


def _anthropic(body: Any) -> bool:
    err = body.get("error")
    return body.get("type") == "error" and isinstance(err, dict) and {"type", "message"} <= set(err)


def _gemini(body: Any) -> bool:
    err = body.get("error") if set(body) == {"error"} else None
    return isinstance(err, dict) and {"code", "message", "status"} <= set(err)


def _status_message(body: Any) -> bool:  # Fish and PicWish
    return set(body) == {"status", "message"} and isinstance(body["status"], int)


def _kling(body: Any) -> bool:
    return set(body) == {"code", "message", "request_id"} and isinstance(body["code"], int) and body["code"]


def _vidu(body: Any) -> bool:
    return set(body) == {"code", "reason", "message", "metadata"}


def _stability(body: Any) -> bool:
    return set(body) == {"id", "name", "errors"} and isinstance(body["errors"], list)


def _plain(body: Any) -> bool:  # the gateway's own paths (/media/...)
    return set(body) == {"message", "code"} and isinstance(body["message"], str)


SHAPES: dict[str, Callable[[Any], bool]] = {
    "openai": _openai,
    "music": _music,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "fish": _status_message,
    "picwish": _status_message,
    "kling": _kling,
    "vidu": _vidu,
    "stability": _stability,
    "plain": _plain,
}


def shape_problem(style: str, body: Any) -> str | None:
    """Why `body` is not an error in `style`'s shape, or None."""
    if not isinstance(body, dict):
        return f"not a JSON object: {body!r:.200}"
    if not SHAPES[style](body):
        return f"not the {style} error shape: {body!r:.300}"
    return None
