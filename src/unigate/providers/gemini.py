"""`gemini` protocol: Google's Gemini API behind the OpenAI-format chat endpoint.

Requests go to `POST {base_url}/v1beta/models/{model}:generateContent` (or
`:streamGenerateContent?alt=sse`) with `x-goog-api-key`; answers and SSE events come back
through the translators in `unigate.translate.gemini`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
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
from unigate.providers.gemini_veo import CREATE_ACTIONS, VeoVideos
from unigate.providers.translated import (
    StreamTranslator,
    TranslatingChatProvider,
    usage_scanner,
)
from unigate.translate.gemini import GeminiToOpenAIStream, gemini_to_openai_response, openai_to_gemini_request
from unigate.video.job import VIDEO_ACTIONS

PROVIDER_TYPE = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiProvider(TranslatingChatProvider):
    protocol = PROVIDER_TYPE
    default_base_url = DEFAULT_BASE_URL
    native_formats = frozenset({"gemini"})
    capabilities = frozenset({"chat", *CREATE_ACTIONS})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        secrets = [config.api_key, *config.headers.values()]
        self.videos = VeoVideos(self.http, config.base_url or DEFAULT_BASE_URL, secrets)

    async def aclose(self) -> None:
        await super().aclose()
        await self.videos.aclose()

    def auth_headers(self, api_key: str) -> dict[str, str]:
        # A header, never `?key=`: URLs end up in logs and traces.
        return {"x-goog-api-key": api_key} if api_key else {}

    def request(self, call: TextCall, target: Target) -> tuple[str, dict[str, Any]]:
        return _path(target, call.stream), openai_to_gemini_request(call.payload)

    def answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return gemini_to_openai_response(body, model)

    def stream_translator(self, call: TextCall) -> StreamTranslator:
        return GeminiToOpenAIStream(call.model, call.include_usage)

    async def native(self, payload: dict[str, Any], target: Target, stream: bool) -> Reply:
        """A Gemini-format call relayed as is: the model lives in the path, so the body the
        client sent goes upstream unchanged."""
        return await self.relay_same_format(
            _path(target, stream),
            orjson.dumps(payload),
            target,
            stream,
            "gemini",
            _take_usage,
            b'"finishReason"',
        )

    # Veo video jobs: the wire protocol lives in gemini_veo.py.
    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in VIDEO_ACTIONS:
            return await super().submit_task(job, target)
        return await self.videos.submit(job, target)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        return await self.videos.poll(refs, timeouts)

    async def task_content(
        self, ref: TaskRef, output: dict[str, Any], variant: str, timeouts: Timeouts
    ) -> Reply:
        return await self.videos.content(ref, output, variant, timeouts)


def _path(target: Target, stream: bool) -> str:
    model = quote(target.upstream_model, safe="")
    verb = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"/v1beta/models/{model}:{verb}"


_take_usage = usage_scanner(b'"usageMetadata"', "promptTokenCount", "candidatesTokenCount")
