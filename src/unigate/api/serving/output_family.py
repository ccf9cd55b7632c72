"""The permission family of a call by what it produces, not only by its path.

A text path can produce other families' output: Gemini `:generateContent` with
`responseModalities: [IMAGE]` (or `AUDIO`, or a `speechConfig`), an OpenAI-format chat with
`modalities: ["audio"]` (or `["image"]`, which OpenRouter-style upstreams honour). Such a call
needs the family of what it asks for - `image` for images, `audio` for audio - exactly as
`/v1/images/generations` or `/v1/audio/speech` would; a call asking for text alone needs
`text`. Text that accompanies an image or audio answer is part of that answer, so it does not
need `text` as well. Endpoints whose family depends on the body say `family_by_output` in the
table: the edge leaves the check to their handler, which calls `require` once it has parsed
the body. Values the gateway cannot classify are refused (400), never guessed as text.
"""

from __future__ import annotations

from typing import Any

from unigate.auth.principal import Principal
from unigate.errors import InvalidRequest, PermissionDenied

TEXT = ("text",)
# Gemini's Modality enum, by name and by number (proto JSON takes either).
_GEMINI_MODALITIES = {
    "TEXT": "text",
    "MODALITY_UNSPECIFIED": "text",
    "IMAGE": "image",
    "AUDIO": "audio",
    "0": "text",
    "1": "text",
    "2": "image",
    "3": "audio",
}
_CHAT_MODALITIES = {"text": "text", "image": "image", "audio": "audio"}


def require(principal: Principal, families: tuple[str, ...]) -> None:
    """403 unless the key may use every family in `families`."""
    if not principal.families:
        return
    for family in families:
        if not principal.may_use_family(family):
            raise PermissionDenied(
                f"This API key may not use the {family} family (this call asks for {family} output).",
                code="family_not_allowed",
            )


def chat_outputs(payload: dict[str, Any]) -> tuple[str, ...]:
    """Families an OpenAI-format chat call produces: `modalities`, and `audio` output options."""
    values = _listed(payload.get("modalities"), "modalities")
    found = {_classify(v, _CHAT_MODALITIES, "modalities", str.lower) for v in values}
    if payload.get("audio") is not None:  # output voice and format: audio is produced
        found.add("audio")
    return _families(found)


def gemini_outputs(payload: dict[str, Any]) -> tuple[str, ...]:
    """Families a Gemini `generateContent` call produces. Google's JSON parser takes both the
    camelCase and the snake_case spelling of each field, so every spelling is read."""
    found: set[str] = set()
    for config_name in ("generationConfig", "generation_config"):
        config = payload.get(config_name)
        if config is None:
            continue
        if not isinstance(config, dict):
            raise InvalidRequest(f"Invalid type for '{config_name}': expected an object.", param=config_name)
        for name in ("responseModalities", "response_modalities"):
            for value in _listed(config.get(name), f"{config_name}.{name}"):
                found.add(_classify(value, _GEMINI_MODALITIES, f"{config_name}.{name}", str.upper))
        if any(config.get(name) is not None for name in ("speechConfig", "speech_config")):
            found.add("audio")
    return _families(found)


def _families(found: set[str]) -> tuple[str, ...]:
    other = tuple(sorted(found - {"text"}))
    return other or TEXT


def _listed(value: Any, param: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str | int) and not isinstance(value, bool):
        return [value]
    raise InvalidRequest(f"Invalid type for '{param}': expected an array.", param=param, code="invalid_type")


def _classify(value: Any, known: dict[str, str], param: str, fold: Any) -> str:
    key = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    family = known.get(fold(key)) if isinstance(key, str) else None
    if family is None:
        names = ", ".join(sorted(k for k in known if not k.isdigit()))
        raise InvalidRequest(
            f"Invalid value in '{param}': expected one of {names}.",
            param=param,
            code="invalid_value",
        )
    return family
