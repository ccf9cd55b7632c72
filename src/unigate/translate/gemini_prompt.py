"""A Gemini `generateContent` request read as one prompt, for the calls that take one (an image or
a speech call on another vendor's media API): the text of the last user turn, the turns' parts,
and the names of what such a call has no place for (earlier turns' words, `fileData` parts,
top-level fields and `generationConfig` fields the caller does not read), for
`x-unigate-dropped-fields`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from unigate.errors import InvalidRequest
from unigate.translate.gemini_fields import as_list, as_object
from unigate.translate.gemini_fields import field as read

Json = dict[str, Any]
_READ = frozenset({"contents", "generationConfig", "generation_config", "model"})
_MODALITIES = ("responseModalities", "response_modalities")


@dataclass(slots=True)
class Prompt:
    text: str
    turns: list[list[Json]]  # each content's parts
    last: int  # the last user turn's index
    config: Json  # generationConfig
    dropped: list[str] = field(default_factory=list)


def read_prompt(request: Json, what: str, config_read: Iterable[str]) -> Prompt:
    """The request's prompt for `what` ("the image"); `config_read`: the generationConfig fields
    (camelCase and snake_case) the caller reads, beside `responseModalities`."""
    contents = [as_object(c) for c in as_list(read(request, "contents"))]
    turns = [[as_object(p) for p in as_list(c.get("parts"))] for c in contents]
    last = next(
        (i for i in reversed(range(len(contents))) if contents[i].get("role", "user") == "user"), None
    )
    if last is None:
        raise InvalidRequest(f"The request has no user turn to make {what} from.", param="contents")
    text = "\n".join(str(p["text"]) for p in turns[last] if isinstance(p.get("text"), str)).strip()
    if not text:
        raise InvalidRequest(f"The last user turn has no text prompt for {what}.", param="contents")
    config = as_object(read(request, "generationConfig"))
    prompt = Prompt(text, turns, last, config)
    if any("text" in p for parts in turns[:last] for p in parts):
        prompt.dropped.append("contents")  # earlier turns' words: such a call has one prompt
    if any(read(p, "fileData") is not None for parts in turns for p in parts):
        prompt.dropped.append("contents.parts.fileData")  # files Google keeps, which the gateway cannot read
    prompt.dropped += sorted(name for name in request if name not in _READ)
    known = {*_MODALITIES, *config_read}
    prompt.dropped += sorted(f"generationConfig.{name}" for name in config if name not in known)
    return prompt
