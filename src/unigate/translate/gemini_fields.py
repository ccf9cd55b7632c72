"""Reading Gemini bodies: a field by its camelCase wire name or the snake_case spelling Google
also accepts, and objects and lists read leniently (what is not one reads as empty). Shared by
every Gemini translator (requests, responses, streams, search grounding, embeddings)."""

from __future__ import annotations

import re
from typing import Any

Json = dict[str, Any]
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def field(obj: Json, name: str) -> Any:
    """`obj[name]` by its camelCase wire name, or by the snake_case spelling Google also accepts."""
    value = obj.get(name)
    return obj.get(_SNAKE.sub("_", name).lower()) if value is None else value


def as_object(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
