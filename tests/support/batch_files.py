"""Batch input and result files through the Files API, as an `openai` SDK client uploads and
reads them."""

from __future__ import annotations

import openai


def upload(client: openai.OpenAI, content: bytes, purpose: str = "batch") -> str:
    """A file of the client's key holding `content`: its id."""
    return client.files.create(file=("input.jsonl", content), purpose=purpose).id  # type: ignore[arg-type]


def content(client: openai.OpenAI, file_id: str | None) -> bytes:
    assert file_id is not None
    return client.files.content(file_id).content
