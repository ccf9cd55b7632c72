"""One text call (chat, completions, embeddings, moderations) relayed to an OpenAI-compatible
upstream (compatible.py's adapter hands it over). On the per-request path, so compiled
(compiled.py): as Python it was about a third of the interpreted work left in a served chat
call.

Pass-through: the client's body is forwarded untouched unless the model id must be mapped,
the usage chunk must be requested for accounting, or `web_search_options` must go; a whole
answer is relayed as received and read for its usage; a stream is relayed by chat_events.py.
"""

from __future__ import annotations

from typing import Final

import orjson

from unigate.providers.base import Reply, Target, TextCall
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.openai import errors as openai_errors
from unigate.providers.openai.chat_events import relay_events
from unigate.providers.openai.reply_usage import body_usage
from unigate.providers.redact import Redactor
from unigate.translate.translation import with_dropped
from unigate.translate.web_search import OPTIONS as SEARCH_OPTIONS

PATHS: Final = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
    "moderations": "/moderations",
}


async def relay(
    http: UpstreamHTTP, call: TextCall, target: Target, web_search: str, redactor: Redactor
) -> Reply:
    """`call` sent to the upstream behind `http`, its answer (or stream) as the adapter's
    `Reply`; a failed answer raised as the status table maps it. `web_search` is the
    provider's policy for `web_search_options` (`drops_search`)."""
    injected = call.stream and not call.include_usage
    unsearched = drops_search(call, target.upstream_model, web_search)
    body = upstream_body(call, target.upstream_model, injected, unsearched)
    resp = await http.post(PATHS[call.op], body, target.timeouts, replay=True)  # text: a repeat is harmless
    if resp.status >= 400:
        await raise_for_answer(resp, openai_errors.said)
    content_type = resp.headers.get("Content-Type", "application/json").encode("latin-1")
    headers = with_dropped([], [SEARCH_OPTIONS]) if unsearched else []
    if call.stream:
        reply = Reply(status=resp.status, content_type=content_type, close=resp.close, headers=headers)
        reply.stream = relay_events(resp, reply.usage, injected, redactor)
        return reply
    data = await read_all(resp)
    usage = body_usage(data)
    return Reply(status=resp.status, content_type=content_type, body=data, usage=usage, headers=headers)


def drops_search(call: TextCall, upstream_model: str, policy: str) -> bool:
    """Whether `web_search_options` must go: OpenAI refuses it but from its search models."""
    if call.op != "chat" or SEARCH_OPTIONS not in call.payload:
        return False
    return policy == "never" or (policy == "auto" and "search" not in upstream_model.lower())


def upstream_body(call: TextCall, upstream_model: str, inject_usage: bool, unsearched: bool = False) -> bytes:
    """The client's bytes when nothing must change; otherwise (or for a request the gateway
    made) one serialisation."""
    if call.body and upstream_model == call.model and not inject_usage and not unsearched:
        return call.body
    payload = dict(call.payload)
    payload["model"] = upstream_model
    if unsearched:
        del payload[SEARCH_OPTIONS]
    if inject_usage:
        options = payload.get("stream_options")
        payload["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return orjson.dumps(payload)
