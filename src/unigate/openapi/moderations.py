"""`POST /v1/moderations` (`api/openai/text.py`): OpenAI's moderation endpoint, relayed to an
`openai`/`azure` upstream or answered by the sandbox's offline classifier."""

from __future__ import annotations

from unigate.openapi.schema import (
    Operation,
    Schema,
    any_of,
    array,
    boolean,
    declared_json,
    json_response,
    number,
    obj,
    ref,
    string,
)
from unigate.openapi.text import TAG
from unigate.shapes.text import MODERATION

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
    return {
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
            declared_json(MODERATION, {"model": "omni-moderation-latest", "input": "I want to kill them."}),
        )
    ]
