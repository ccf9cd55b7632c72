"""`openai` protocol: any OpenAI-compatible upstream (OpenAI, DeepSeek, Groq, vLLM, ...).

Pass-through: the client's body is forwarded untouched unless the model id must be mapped
or the usage chunk must be requested for accounting; the upstream's body and SSE events are
relayed as received. Only events that mention `usage` are parsed. With `responses: native`,
Responses API calls are relayed too (responses.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any

import orjson

from unigate.config import ProviderConfig
from unigate.limits.estimate import prompt_tokens
from unigate.providers.base import (
    MediaCall,
    Provider,
    ProviderContext,
    Reply,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    TextCall,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.body_stream import relay_bytes, sse_events
from unigate.providers.form_body import FormBody
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.model_list import Listing, listed_models
from unigate.providers.openai import errors as openai_errors
from unigate.providers.openai.reply_usage import body_usage
from unigate.providers.openai.responses import RESPONSES_FORMAT, Query, ResponsesRelay
from unigate.providers.openai.videos import OpenAIVideos
from unigate.providers.redact import STREAM_ERROR_MARK, Redactor
from unigate.providers.same_format import ClientRequest, request_body
from unigate.translate.sse import data_lines, event_data, split_events
from unigate.translate.translation import with_dropped
from unigate.translate.web_search import OPTIONS as SEARCH_OPTIONS
from unigate.transport.response import Response
from unigate.usage.recorder import Usage
from unigate.video.job import VIDEO_ACTIONS

if TYPE_CHECKING:
    from unigate.batches.native import NativeBatches

PROVIDER_TYPE = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_PATHS = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
    "moderations": "/moderations",
}
_MEDIA_PATHS = {
    "audio.transcriptions": "/audio/transcriptions",
    "audio.translations": "/audio/translations",
    "audio.speech": "/audio/speech",
    "images.generations": "/images/generations",
    "images.edits": "/images/edits",
}


class OpenAIProvider(Provider):
    protocol = PROVIDER_TYPE
    vendor = "OpenAI"  # how errors of its batch calls name the upstream
    capabilities = frozenset(_PATHS) | frozenset(_MEDIA_PATHS) | frozenset(VIDEO_ACTIONS)

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        credentials = self.credentials(config.api_key) if config.api_key else {}
        headers = upstream_headers({"Content-Type": "application/json"}, config.headers, credentials)
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers, config)
        self.videos = OpenAIVideos(self.http, [config.api_key, *config.headers.values()])
        self.responses = ResponsesRelay(self.http, self.redactor)
        if config.responses == "native":  # the upstream serves /responses itself
            self.native_formats = frozenset({RESPONSES_FORMAT})
        self.batches: NativeBatches | None = None
        if config.batches == "native":  # whole batches go to the upstream's /files + /batches
            # Imported here, at the build of a provider configured for it: a worker whose
            # providers relay no batches never loads the vendor's batch protocol.
            from unigate.providers.openai.batches import OpenAIBatches

            self.batches = OpenAIBatches(self.http, self.timeouts(), self.redactor, self.vendor)

    def credentials(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"}

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_models(self, timeouts: Timeouts) -> list[str]:
        return await listed_models(self.http, Listing("/models"), timeouts, openai_errors.said)

    def native_batches(self) -> NativeBatches | None:
        return self.batches

    # Video jobs (`/videos`): the wire protocol lives in videos.py.
    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in VIDEO_ACTIONS:
            return await super().submit_task(job, target)
        return await self.videos.submit(job, target)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        return await self.videos.poll([r for r in refs if r.action in VIDEO_ACTIONS], timeouts)

    async def task_content(
        self, ref: TaskRef, output: dict[str, Any], variant: str, timeouts: Timeouts
    ) -> Reply:
        return await self.videos.content(ref, output, variant, timeouts)

    async def delete_task(self, ref: TaskRef, timeouts: Timeouts) -> None:
        if ref.action in VIDEO_ACTIONS:
            await self.videos.delete(ref, timeouts)

    # The Responses API, on an upstream configured `responses: native` (responses.py).
    def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: ClientRequest | None = None
    ) -> Coroutine[Any, Any, Reply]:
        return self.responses_create(payload, target, stream, client.raw if client else None)

    async def responses_create(
        self, payload: dict[str, Any], target: Target, stream: bool, raw: bytes | None = None
    ) -> Reply:
        """`POST /responses`, the body forwarded with only the model id mapped: `raw` (the
        client's bytes, when `payload` is their unchanged parse) is kept byte for byte."""
        if RESPONSES_FORMAT not in self.native_formats:
            return await super().native(payload, target, stream)
        body = request_body(payload, target.upstream_model, raw)
        return await self.responses.create(body, target.timeouts, stream)

    # Lookups of a response this upstream holds (`upstream_id` is its own id): the upstream's
    # status and bytes, or a stream for `GET ?stream=true`; errors raised ready to render.
    def responses_get(
        self, upstream_id: str, query: Query = (), timeouts: Timeouts | None = None
    ) -> Coroutine[Any, Any, Reply]:
        return self.responses.lookup("GET", upstream_id, "", timeouts or self.timeouts(), query)

    def responses_delete(
        self, upstream_id: str, timeouts: Timeouts | None = None
    ) -> Coroutine[Any, Any, Reply]:
        return self.responses.lookup("DELETE", upstream_id, "", timeouts or self.timeouts())

    def responses_cancel(
        self, upstream_id: str, timeouts: Timeouts | None = None
    ) -> Coroutine[Any, Any, Reply]:
        return self.responses.lookup("POST", upstream_id, "/cancel", timeouts or self.timeouts())

    def responses_input_items(
        self, upstream_id: str, query: Query = (), timeouts: Timeouts | None = None
    ) -> Coroutine[Any, Any, Reply]:
        return self.responses.lookup("GET", upstream_id, "/input_items", timeouts or self.timeouts(), query)

    # The relay coroutine itself, not a wrapper awaiting it: one frame less per resumption.
    def chat(self, call: TextCall, target: Target) -> Coroutine[Any, Any, Reply]:
        return self._relay(call, target)

    def complete(self, call: TextCall, target: Target) -> Coroutine[Any, Any, Reply]:
        return self._relay(call, target)

    def embed(self, call: TextCall, target: Target) -> Coroutine[Any, Any, Reply]:
        return self._relay(call, target)

    async def moderate(self, call: TextCall, target: Target) -> Reply:
        reply = await self._relay(call, target)
        # A moderation answer reports no usage: the input's tokens, counted as limits count
        # them, are what the call is accounted for.
        if not reply.usage.prompt_tokens:
            reply.usage.prompt_tokens = prompt_tokens(call.payload.get("input"))
        return reply

    async def media(self, call: MediaCall, target: Target) -> Reply:
        """Audio and images: forms rebuilt from the validated parts (files streamed from
        their spool), JSON forwarded as is; speech audio relayed as it arrives."""
        path = _MEDIA_PATHS.get(call.op)
        if path is None:
            return await super().media(call, target)
        if call.form is not None:
            form = FormBody(call.form, {"model": target.upstream_model})
            resp = await self.http.post(path, form, target.timeouts)
        else:
            body = call.raw
            if target.upstream_model != call.model:
                body = orjson.dumps({**call.payload, "model": target.upstream_model})
            resp = await self.http.post(path, body, target.timeouts)
        if resp.status >= 400:
            await raise_for_answer(resp, openai_errors.said)
        content_type = resp.headers.get("Content-Type", "application/octet-stream").encode("latin-1")
        if call.op == "audio.speech":
            return Reply(
                status=resp.status, content_type=content_type, stream=relay_bytes(resp), close=resp.close
            )
        return Reply(status=resp.status, content_type=content_type, body=await read_all(resp))

    def _drops_search(self, call: TextCall, upstream_model: str) -> bool:
        """Whether `web_search_options` must go: OpenAI refuses it but from its search models."""
        if SEARCH_OPTIONS not in call.payload or call.op != "chat":
            return False
        policy = self.config.web_search
        return policy == "never" or (policy == "auto" and "search" not in upstream_model.lower())

    async def _relay(self, call: TextCall, target: Target) -> Reply:
        injected = call.stream and not call.include_usage
        unsearched = self._drops_search(call, target.upstream_model)
        body = _upstream_body(call, target.upstream_model, injected, unsearched)
        resp = await self.http.post(
            _PATHS[call.op], body, target.timeouts, replay=True
        )  # text: a repeat is harmless
        if resp.status >= 400:
            await raise_for_answer(resp, openai_errors.said)
        content_type = resp.headers.get("Content-Type", "application/json").encode("latin-1")
        headers = with_dropped([], [SEARCH_OPTIONS]) if unsearched else []
        if call.stream:
            reply = Reply(status=resp.status, content_type=content_type, close=resp.close, headers=headers)
            reply.stream = _relay_events(resp, reply.usage, injected, self.redactor)
            return reply
        data = await read_all(resp)
        usage = body_usage(data)
        return Reply(status=resp.status, content_type=content_type, body=data, usage=usage, headers=headers)


def _upstream_body(
    call: TextCall, upstream_model: str, inject_usage: bool, unsearched: bool = False
) -> bytes:
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


def _usage_from(obj: Any, usage: Usage) -> bool:
    if not isinstance(obj, dict):
        return False
    found = obj.get("usage")
    if not isinstance(found, dict):
        return False
    usage.prompt_tokens = int(found.get("prompt_tokens") or 0)
    usage.completion_tokens = int(found.get("completion_tokens") or 0)
    return True


async def _relay_events(
    resp: Response, usage: Usage, strip_usage_chunk: bool, redactor: Redactor
) -> AsyncIterator[bytes]:
    # Until the upstream reports usage (its last chunk), count one completion token per
    # event after the role chunk: OpenAI-style upstreams stream about one token per chunk,
    # so a client that leaves mid-stream is still accounted for what it received.
    events = 0
    reported = False
    try:
        async for run in sse_events(resp):
            if run.find(b'"usage"') >= 0:
                run, found = _take_usage(run, usage, strip_usage_chunk)
                reported = reported or found
                if not run:
                    continue
            if not reported:
                events += data_lines(run)
                usage.completion_tokens = max(0, events - 1)
            if run.find(STREAM_ERROR_MARK) >= 0:  # an in-band error: the upstream's words, scrubbed
                run = redactor.data(run)
            yield run
    finally:
        resp.release()


def _take_usage(run: bytes, usage: Usage, strip: bool) -> tuple[bytes, bool]:
    """Record usage from the events of `run` (and say whether there was any); drop the
    usage-only chunk the client did not ask for (the gateway requested it, for accounting)."""
    kept = []
    found = False
    for event in split_events(run):
        data = event_data(event)
        if data.find(b'"usage"') >= 0:
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                obj = None
            if _usage_from(obj, usage):
                found = True
                if strip and isinstance(obj, dict) and obj.get("choices") == []:
                    continue
        kept.append(event)
    return b"".join(kept), found
