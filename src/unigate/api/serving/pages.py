"""The list object OpenAI's list endpoints answer with (files, batches, videos, response input
items): one page of objects with cursor ids, declared once for every router that pages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def list_page(data: Sequence[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """`{"object": "list", "data", "first_id", "last_id", "has_more"}`; the ids are null on an
    empty page."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": has_more,
    }
