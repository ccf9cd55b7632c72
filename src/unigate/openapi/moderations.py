"""`POST /v1/moderations` (`api/openai/text.py`): OpenAI's moderation endpoint, relayed to an
`openai`/`azure` upstream or answered by the sandbox's offline classifier."""

from __future__ import annotations

from unigate.openapi.schema import (
    Operation,
    Schema,
    any_of,
    array,
    boolean,
    const,
    json_body,
    json_response,
    number,
    obj,
    ref,
    required_text,
    string,
)
from unigate.openapi.text import TAG

# OpenAI's moderation categories, in its order: the keys of `categories`, `category_scores`
# and `category_applied_input_types` (the sandbox scores these too).
CATEGORIES = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)


def _per_category(schema: Schema) -> Schema:
    return obj(dict.fromkeys(CATEGORIES, schema), CATEGORIES)


def schemas() -> dict[str, Schema]:
    text_part = obj({"type": const("text"), "text": string()}, ["type", "text"])
    image_part = obj(
        {
            "type": const("image_url"),
            "image_url": obj(
                {
                    "url": required_text(
                        description="A base64 data URL, or an http(s) URL the gateway fetches."
                    )
                },
                ["url"],
            ),
        },
        ["type", "image_url"],
    )
    return {
        "ModerationRequest": obj(
            {
                "input": any_of(
                    string(),
                    array(string(), minItems=1),
                    array(any_of(text_part, image_part), minItems=1),
                    description="A text, texts (a result each), or text and image parts (one result).",
                ),
                "model": required_text(description="Default omni-moderation-latest."),
            },
            ["input"],
        ),
        "Moderation": obj(
            {
                "id": string(),
                "model": string(),
                "results": array(
                    obj(
                        {
                            "flagged": boolean(),
                            "categories": _per_category(any_of(boolean(), {"type": "null"})),
                            "category_scores": _per_category(number(0, 1)),
                            "category_applied_input_types": _per_category(array({"enum": ["text", "image"]})),
                        },
                        ["flagged", "categories", "category_scores", "category_applied_input_types"],
                    )
                ),
            },
            ["id", "model", "results"],
        ),
    }


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/v1/moderations",
            "createModeration",
            "Moderation (OpenAI format)",
            TAG,
            {"200": json_response("One result per input.", ref("Moderation"))},
            json_body(
                ref("ModerationRequest"), {"model": "omni-moderation-latest", "input": "I want to kill them."}
            ),
        )
    ]
