"""The sandbox's answer to a Gemini `generateContent` call that asks for image output
(`generationConfig.responseModalities` with IMAGE): a text part and an `inlineData` PNG drawn
from the prompt, as one response or as a single SSE event."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import orjson

from unigate.errors import InvalidRequest
from unigate.providers.base import Reply
from unigate.translate.sse import event
from unigate.usage.recorder import Usage


def _prompt(payload: dict[str, Any]) -> str:
    texts = []
    for content in payload.get("contents") or []:
        if isinstance(content, dict) and content.get("role", "user") == "user":
            texts += [
                str(p["text"]) for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p
            ]
    if not texts:
        raise InvalidRequest("The request has no text prompt for the image.", code="invalid_argument")
    return texts[-1]


def _config(payload: dict[str, Any]) -> dict[str, Any]:
    config = payload.get("generationConfig") or payload.get("generation_config") or {}
    return config if isinstance(config, dict) else {}


async def gemini_image_reply(payload: dict[str, Any], model: str, stream: bool) -> Reply:
    from unigate_sandbox import media

    prompt = _prompt(payload)
    image_config = _config(payload).get("imageConfig") or {}
    try:
        size = media.aspect_size(image_config.get("aspectRatio") if isinstance(image_config, dict) else None)
    except ValueError as exc:
        raise InvalidRequest(str(exc), code="invalid_argument") from None
    image = await asyncio.to_thread(media.generate_image, prompt, size, "png")
    parts = [
        {"text": f"Here is an image of: {prompt}"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(image).decode()}},
    ]
    prompt_tokens = max(1, len(prompt) // 4)
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 1290,
            "totalTokenCount": prompt_tokens + 1290,
        },
        "modelVersion": model,
    }
    data = orjson.dumps(body)
    usage = Usage(prompt_tokens, 1290)
    if not stream:
        return Reply(body=data, usage=usage, wire="gemini")
    reply = Reply(content_type=b"text/event-stream", usage=usage, wire="gemini")
    reply.stream = _one_event(data)
    return reply


async def _one_event(data: bytes) -> AsyncIterator[bytes]:
    yield event(data)
