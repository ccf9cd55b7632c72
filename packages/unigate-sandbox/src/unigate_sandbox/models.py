"""The sandbox's models and the one kind of call each serves; what `/v1/models` and key
permissions see of them is each kind's family (`KIND_FAMILY`), which the plugin hands core."""

from __future__ import annotations

from typing import Literal

from unigate.config import Family

PROTOCOL = "sandbox"  # the provider `protocol` (and entry point name) the sandbox answers to
ModelKind = Literal[
    "chat",
    "embedding",
    "moderation",
    "music",
    "transcription",
    "speech",
    "sound effect",
    "lip sync",
    "image",
    "video",
    "visual",
]

# The sandbox's models and the one kind of call each answers. The sandbox refuses a model it
# knows used for another kind (chat with a music model), as a real vendor would; names it does
# not know (a route's own `model`) are served for any kind.
SANDBOX_MODELS: dict[str, ModelKind] = {
    "sandbox-chat": "chat",  # chat and text completions
    "sandbox-embedding": "embedding",
    # /v1/moderations (OpenAI's ids, so a client's default model reaches the sandbox)
    **dict.fromkeys(("omni-moderation-latest", "text-moderation-latest"), "moderation"),
    **dict.fromkeys(("chirp-v3-0", "chirp-v3-5", "chirp-v4", "chirp-v4-5"), "music"),
    "sandbox-transcribe": "transcription",  # /v1/audio/transcriptions and /translations
    "sandbox-tts": "speech",  # /v1/audio/speech
    "sandbox-image": "image",  # /v1/images/*, and image output from :generateContent
    "s1": "speech",  # /fish/v1/tts (Fish's `model` header)
    "fish-asr": "transcription",  # /fish/v1/asr
    **dict.fromkeys(
        (
            "stable-image-ultra",
            "stable-image-core",
            "sd3.5-large",
            "sd3.5-large-turbo",
            "sd3.5-medium",
            "sd3.5-flash",
        ),
        "image",
    ),
    **dict.fromkeys(
        (
            "sandbox-video",  # any video family
            "sora-2",  # /v1/videos' default model
            "sora-2-pro",
            "kling-v1",  # Kling's default `model_name`
            "kling-v1-6",
            "kling-v2-master",
            "kling-v2-1-master",
            "kling-v2-5-turbo",
            "kling-v2-6",
            "veo-2.0-generate-001",
            "veo-3.0-generate-001",
            "veo-3.0-fast-generate-001",
            "veo-3.1-generate-preview",
        ),
        "video",
    ),
    "audio1.0": "sound effect",  # /ent/v2/text2audio
    "lip-sync": "lip sync",  # /ent/v2/lip-sync (media.lip_sync_model)
    # /api/tasks/visual/* and /api/tasks/document/ocr
    **dict.fromkeys(("picwish/segmentation", "picwish/inpaint", "picwish/scale", "picwish/ocr"), "visual"),
}

# The key family whose endpoints call each kind (what a family-limited key lists).
KIND_FAMILY: dict[ModelKind, Family] = {
    "chat": "text",
    "embedding": "text",
    "moderation": "text",
    "music": "music",
    "transcription": "audio",
    "speech": "audio",
    "sound effect": "audio",
    "lip sync": "audio",
    "image": "image",
    "video": "video",
    "visual": "visual",
}
