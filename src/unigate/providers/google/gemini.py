"""`gemini` protocol: Google's Gemini API behind the OpenAI-format chat endpoint.

Requests go to `POST {base_url}/v1beta/models/{model}:generateContent` (or
`:streamGenerateContent?alt=sse`) with `x-goog-api-key`; answers and SSE events come back
through the translators in `unigate.translate.gemini`. A Gemini client's own request is relayed
instead (`native`): its body bytes and query string. Token counts: `:countTokens`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
    MediaCall,
    ProviderContext,
    Reply,
    RouteFailed,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    TextCall,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.google.images import IMAGE_OPS, GeminiImages
from unigate.providers.google.speech import SPEECH_OP, TRANSCRIPT_OPS, GeminiSpeech
from unigate.providers.google.veo import CREATE_ACTIONS, VeoVideos
from unigate.providers.google.wire import model_path
from unigate.providers.model_list import Listing
from unigate.providers.same_format import ClientRequest, with_query
from unigate.providers.translated import (
    StreamTranslator,
    TranslatingChatProvider,
    usage_scanner,
)
from unigate.storage import LocalStorage
from unigate.translate.gemini import GeminiToOpenAIStream, gemini_to_openai_response, openai_to_gemini_request
from unigate.translate.gemini_embed import (
    embed_tokens,
    gemini_batches,
    input_tokens,
    openai_embeddings,
    with_upstream_model,
)
from unigate.translate.token_ids import spelled_by_ids
from unigate.translate.token_ids import table as token_table
from unigate.translate.translation import with_dropped
from unigate.usage.recorder import Usage
from unigate.video.job import VIDEO_ACTIONS

PROVIDER_TYPE = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
STREAM_QUERY = "alt=sse"  # streams as server-sent events (without it Google streams a JSON array)


class GeminiProvider(TranslatingChatProvider):
    protocol = PROVIDER_TYPE
    default_base_url = DEFAULT_BASE_URL
    models_listing = Listing("/v1beta/models?pageSize=1000", items="models", key="name", prefix="models/")
    native_formats = frozenset({"gemini"})
    capabilities = frozenset({"chat", "embeddings", *IMAGE_OPS, SPEECH_OP, *TRANSCRIPT_OPS, *CREATE_ACTIONS})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        secrets = [config.api_key, *config.headers.values()]
        self.videos = VeoVideos(self.http, config.base_url or DEFAULT_BASE_URL, secrets)
        self.images = GeminiImages(self.post_json, context.storage or LocalStorage(context.data_dir))
        self.speech = GeminiSpeech(self.post_json)

    async def aclose(self) -> None:
        await super().aclose()
        await self.videos.aclose()

    def auth_headers(self, api_key: str) -> dict[str, str]:
        # A header, never `?key=`: URLs end up in logs and traces.
        return {"x-goog-api-key": api_key} if api_key else {}

    def request(self, call: TextCall, target: Target) -> tuple[str, dict[str, Any]]:
        if call.stream:
            path = with_query(model_path(target, "streamGenerateContent"), STREAM_QUERY)
        else:
            path = model_path(target, "generateContent")
        return path, openai_to_gemini_request(call.payload)

    def answer(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        return gemini_to_openai_response(body, model)

    def stream_translator(self, call: TextCall) -> StreamTranslator:
        return GeminiToOpenAIStream(call.model, call.include_usage)

    async def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: ClientRequest | None = None
    ) -> Reply:
        """A Gemini-format call relayed as is: the model lives in the path, so the body the
        client sent goes upstream unchanged, with its query (`alt=sse` for a stream)."""
        if client is None:
            client = ClientRequest(query=STREAM_QUERY if stream else "")
        body = client.raw if client.raw is not None else orjson.dumps(payload)
        action = "streamGenerateContent" if stream else "generateContent"
        return await self.relay_same_format(
            with_query(model_path(target, action), client.query),
            body,
            target,
            stream,
            "gemini",
            _take_usage,
            b'"finishReason"',
        )

    async def count_native(self, payload: dict[str, Any], target: Target, client: ClientRequest) -> Reply:
        """`:countTokens` with the client's body; a `generateContentRequest` naming the model
        is sent with the upstream's model instead (the only change)."""
        body = client.raw if client.raw is not None else orjson.dumps(payload)
        inner = payload.get("generateContentRequest")
        upstream = f"models/{target.upstream_model}"
        if isinstance(inner, dict) and "model" in inner and inner["model"] != upstream:
            body = orjson.dumps({**payload, "generateContentRequest": {**inner, "model": upstream}})
        path = with_query(model_path(target, "countTokens"), client.query)
        return Reply(body=await self.post_json(path, body, target), wire="gemini")

    async def embed_native(
        self, payload: dict[str, Any], target: Target, client: ClientRequest, batch: bool
    ) -> Reply:
        """A Gemini client's embeddings relayed as sent (`taskType` and `title` kept); a body
        naming the client's model id (a batch's requests must) is sent with the upstream's."""
        renamed = with_upstream_model(payload, batch, f"models/{target.upstream_model}")
        body = orjson.dumps(renamed) if renamed is not None else client.raw or orjson.dumps(payload)
        path = with_query(model_path(target, "batchEmbedContents" if batch else "embedContent"), client.query)
        data = await self.post_json(path, body, target)
        return Reply(body=data, usage=Usage(embed_tokens(payload), 0), wire="gemini")

    async def count_canonical(self, payload: dict[str, Any], target: Target) -> int:
        request = {"model": f"models/{target.upstream_model}", **openai_to_gemini_request(payload)}
        body = orjson.dumps({"generateContentRequest": request})
        data = await self.post_json(model_path(target, "countTokens"), body, target)
        try:
            answer = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise RouteFailed("The upstream's answer is not JSON.") from None
        count = answer.get("totalTokens", 0) if isinstance(answer, dict) else None
        if type(count) is not int or count < 0:  # Google leaves out a zero count
            raise RouteFailed("The upstream's token count has no `totalTokens`.")
        return count

    async def embed(self, call: TextCall, target: Target) -> Reply:
        """OpenAI-format embeddings on Gemini's embedding models: `:batchEmbedContents`, a
        hundred texts a call (translate/gemini_embed.py). Google reports no tokens for them:
        the input is counted here (a token array's ids, or text as limits count it)."""
        if spelled_by_ids(call.payload.get("input")):
            await asyncio.to_thread(token_table)  # the ids' table, read off the event loop once
        batches, dropped = gemini_batches(call.payload, target.upstream_model)
        path = model_path(target, "batchEmbedContents")
        answers = []
        for batch in batches:
            data = await self.post_json(path, orjson.dumps(batch), target)
            try:
                answers.append(orjson.loads(data))
            except orjson.JSONDecodeError:
                raise RouteFailed("The upstream's answer is not JSON.") from None
        tokens = input_tokens(call.payload.get("input"))
        answer = openai_embeddings(
            answers, call.model, call.payload.get("encoding_format") or "float", tokens
        )
        return Reply(body=orjson.dumps(answer), usage=Usage(tokens, 0), headers=with_dropped([], dropped))

    async def media(self, call: MediaCall, target: Target) -> Reply:
        """Images generated and edited by Gemini's image models (images.py), speech made by its
        TTS models and written down by the others (speech.py)."""
        if call.op in IMAGE_OPS:
            return await self.images.draw(call, target)
        if call.op == SPEECH_OP:
            return await self.speech.speak(call, target)
        if call.op in TRANSCRIPT_OPS:
            return await self.speech.transcribe(call, target)
        return await super().media(call, target)

    # Veo video jobs: the wire protocol lives in veo.py.
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


_take_usage = usage_scanner(b'"usageMetadata"', "promptTokenCount", "candidatesTokenCount")
