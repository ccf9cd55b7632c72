"""Batch input and result files through the Files API, as an `openai` SDK client uploads and
reads them."""

from __future__ import annotations

import json

import openai
from openai.types import Batch


def upload(client: openai.OpenAI, content: bytes, purpose: str = "batch") -> str:
    """A file of the client's key holding `content`: its id."""
    return client.files.create(file=("input.jsonl", content), purpose=purpose).id  # type: ignore[arg-type]


def content(client: openai.OpenAI, file_id: str | None) -> bytes:
    assert file_id is not None
    return client.files.content(file_id).content


def chat_batch(client: openai.OpenAI, n: int, model: str) -> Batch:
    """A batch of `n` chat completion requests (`c0`, `c1`, ... asking `q0`, `q1`, ...) to
    `model`, its input file uploaded first."""
    lines = [
        {"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": model, "messages": [{"role": "user", "content": f"q{i}"}]}}
        for i in range(n)
    ]  # fmt: skip
    data = b"\n".join(json.dumps(line).encode() for line in lines)
    return client.batches.create(
        input_file_id=upload(client, data),
        endpoint="/v1/chat/completions",
        completion_window="24h",
    )
