"""The Gemini API's model paths, shared by the `gemini` adapter's parts (text, images, speech)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import quote

from unigate.providers.base import Target

# The adapter's short JSON exchange (`TranslatingChatProvider.post_json`): path, body → answer.
PostJson = Callable[[str, bytes, Target], Awaitable[bytes]]


def model_path(target: Target, action: str) -> str:
    """`/v1beta/models/{upstream model}:{action}`."""
    return f"/v1beta/models/{quote(target.upstream_model, safe='')}:{action}"
