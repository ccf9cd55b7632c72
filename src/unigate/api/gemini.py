"""Gemini-format endpoints: `POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent` (also under `/v1/models/...`), relayed as is to a Gemini upstream and
through the canonical form to any other. Keys arrive as `x-goog-api-key` or `?key=`; errors
use Google's error shape. Embeddings (`gemini_embed`) and the model listing (`gemini_models`)
are registered here too, so the whole Gemini surface is one entry in the app's table."""

from __future__ import annotations

from collections.abc import Awaitable

import orjson

from unigate.api import gemini_embed, gemini_models
from unigate.api.hosted_tools import HostedTools
from unigate.api.output_family import gemini_outputs, require
from unigate.api.present import presenter
from unigate.api.text import TextAPI
from unigate.asgi import Request
from unigate.auth.principal import Principal
from unigate.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, TextCall
from unigate.relay import Framing
from unigate.translate.dropped import Dropped
from unigate.translate.gemini import OpenAIToGeminiStream, gemini_to_openai_request, openai_to_gemini_response


def gemini_error_event(message: str) -> bytes:
    """google-genai raises on a stream chunk whose JSON starts with `{"error":`."""
    body = orjson.dumps({"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}})
    return b"data: " + body + b"\n\n"


# google-genai parses any non-`data:` line as JSON, so a comment would break it; a lone
# blank line is a valid SSE no-op that its line reader skips.
GEMINI_FRAMING = Framing(gemini_error_event, b"\r\n")


class GeminiAPI:
    def __init__(self, gw: Gateway) -> None:
        self.text = TextAPI(gw)
        self.limit = gw.config.limits.max_json_body
        self.hosted = HostedTools(gw)

    async def generate(self, request: Request, principal: Principal | None) -> None:
        await self._serve(request, principal, stream=False)

    async def stream(self, request: Request, principal: Principal | None) -> None:
        await self._serve(request, principal, stream=True)

    async def _serve(self, request: Request, principal: Principal | None, stream: bool) -> None:
        _, payload = await request.json_object(self.limit)
        model = request.params["model"]
        outputs = gemini_outputs(payload)
        require(principal, outputs)  # image output needs `image`, audio `audio`
        dropped = Dropped()  # Google's tools a translated route cannot run
        canonical = gemini_to_openai_request(payload, model, dropped)
        canonical["stream"] = stream
        if stream:
            canonical["stream_options"] = {"include_usage": True}  # Gemini's last chunk has usage
        call = TextCall("chat", orjson.dumps(canonical), canonical, model, stream, stream)
        show = presenter("gemini", model, openai_to_gemini_response, OpenAIToGeminiStream)

        # Image output: only upstreams that produce images natively can answer it; the
        # canonical chat form cannot.
        image = "image" in outputs

        def native(target: Target) -> Awaitable[Reply] | None:
            formats = target.provider.native_formats
            if "gemini" in formats or (image and "gemini-image" in formats):
                return target.provider.native(payload, target, stream)
            self.hosted.check(dropped)
            return None

        finish = self.hosted.finish("gemini", principal.key_id, dropped) if principal else None
        await self.text.serve(request, principal, call, show, GEMINI_FRAMING, native, finish)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = GeminiAPI(gw)
    out = [*gemini_embed.endpoints(gw), *gemini_models.endpoints(gw)]
    for version in ("v1beta", "v1"):
        base = f"/{version}/models/{{model}}"
        for action, handler in ((":generateContent", api.generate), (":streamGenerateContent", api.stream)):
            out.append(
                Endpoint("POST", base + action, handler, family="text", style="gemini", family_by_output=True)
            )
    return out
