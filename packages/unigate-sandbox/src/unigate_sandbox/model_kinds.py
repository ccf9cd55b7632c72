"""The sandbox refuses one of its own models used for another kind of call (chat with a music
model, embeddings with an image model) with a 404 naming the model's kind and one that fits,
as OpenAI answers a chat call to an embedding model. Names it does not know (a route's own
upstream `model`) are served for any kind."""

from __future__ import annotations

from unigate.errors import NotFound
from unigate_sandbox.models import SANDBOX_MODELS, ModelKind

# Media calls by operation.
MEDIA_KINDS: dict[str, ModelKind] = {
    "audio.transcriptions": "transcription",
    "audio.translations": "transcription",
    "fish.asr": "transcription",
    "audio.speech": "speech",
    "fish.tts": "speech",
    "images.generations": "image",
    "images.edits": "image",
    "stability.generate": "image",
}

# Task actions other than music's (an action ending in `/` matches by prefix).
TASK_KINDS: dict[str, ModelKind] = {
    "text2video": "video",
    "image2video": "video",
    "remix": "video",
    "text2audio": "sound effect",
    "lip-sync": "lip sync",
    "visual/": "visual",
    "document/": "visual",
}


def task_kind(family: str, action: str) -> ModelKind | None:
    if family == "music":
        return "music"
    return TASK_KINDS.get(action) or TASK_KINDS.get(action.split("/", 1)[0] + "/")


def check_kind(model: str, kind: ModelKind | None) -> None:
    """Raise NotFound when `model` is a sandbox model of another kind than `kind`."""
    own = SANDBOX_MODELS.get(model)
    if own is None or kind is None or own == kind:
        return
    fitting = next((name for name, k in SANDBOX_MODELS.items() if k == kind), None)
    hint = f"; the sandbox's {kind} model is '{fitting}'" if fitting else ""
    article = "an" if own[0] in "aeiou" else "a"
    raise NotFound(
        f"The model '{model}' is {article} {own} model and does not serve {kind} calls{hint}.",
        code="model_not_supported",
        param="model",
    )
