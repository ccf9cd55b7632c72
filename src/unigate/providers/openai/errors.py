"""How an OpenAI-compatible upstream's error body reads, for the `openai` adapter's relays
(chat, media, Responses): its `error.message`, and the body itself when it is OpenAI's error
shape, relayed to OpenAI-format clients as is. What the status means is the table's
(`providers/upstream_status.py`). Bodies are already scrubbed of the provider's secrets by
`UpstreamHTTP`."""

from __future__ import annotations

from unigate.providers.upstream_status import Said, error_object, message_of


def said(data: bytes) -> Said:
    err = error_object(data)
    return Said(message_of(err), raw_openai_body=data if err is not None else None)
