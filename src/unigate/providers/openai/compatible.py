"""`openai` protocol: any OpenAI-compatible upstream (OpenAI, DeepSeek, Groq, vLLM, ...).

Pass-through: the client's body is forwarded untouched unless the model id must be mapped
or the usage chunk must be requested for accounting; the upstream's body and SSE events are
relayed as received. Only events that mention `usage` are parsed. Text calls are relayed by
text_relay.py (compiled) and chat_events.py; with `responses: native`, Responses API calls are
relayed too (responses.py).
"""

from __future__ import annotations

from collections.abc import Coroutine
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
from unigate.providers.body_stream import relay_bytes
from unigate.providers.form_body import FormBody
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.model_list import Listing, listed_models
from unigate.providers.openai import errors as openai_errors
from unigate.providers.openai.responses import RESPONSES_FORMAT, Query, ResponsesRelay
from unigate.providers.openai.text_relay import PATHS, relay
from unigate.providers.openai.videos import OpenAIVideos
from unigate.providers.same_format import ClientRequest, request_body
from unigate.video.job import VIDEO_ACTIONS

if TYPE_CHECKING:
    from unigate.batches.native import NativeBatches

PROVIDER_TYPE = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
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
    capabilities = frozenset(PATHS) | frozenset(_MEDIA_PATHS) | frozenset(VIDEO_ACTIONS)

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

    def _relay(self, call: TextCall, target: Target) -> Coroutine[Any, Any, Reply]:
        return relay(self.http, call, target, self.config.web_search, self.redactor)
