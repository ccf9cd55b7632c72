"""Gemini-format endpoints: `POST /v1beta/models/{model}:generateContent`,
`:streamGenerateContent` and `:countTokens` (also under `/v1/models/...`), relayed as is to a
Gemini upstream (the client's body bytes and query string) and through the canonical form,
translated only when such a route needs it, to any other (`api/serving/dialect_call.py`). Keys arrive as
`x-goog-api-key` or `?key=` (never relayed upstream); errors use Google's error shape.
Embeddings (`gemini_embed`) and the model listing (`gemini_models`) are registered here too, so
the whole Gemini surface is one entry in the app's table."""

from __future__ import annotations

from unigate.api.gemini import embed as gemini_embed
from unigate.api.gemini import models as gemini_models
from unigate.api.gemini.draw import GeminiDraw, Route
from unigate.api.gemini.speak import GeminiSpeak
from unigate.api.openai.text import TextAPI
from unigate.api.serving.dialect_call import DialectCall
from unigate.api.serving.hosted_tools import HostedTools
from unigate.api.serving.output_family import gemini_outputs, require
from unigate.api.serving.present import presenter
from unigate.api.serving.relay import Framing
from unigate.api.serving.token_count import TokenCounter
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint
from unigate.gateway import Gateway
from unigate.providers.same_format import ClientRequest, relayed_query
from unigate.providers.translated import StreamTranslator
from unigate.translate.gemini import OpenAIToGeminiStream, gemini_to_openai_request, openai_to_gemini_response
from unigate.translate.gemini_inbound import Contents
from unigate.translate.known_turns import TURNS_BYTES
from unigate.translate.sse import BLANK_LINE, json_event
from unigate.translate.translation import Translation
from unigate.usage.recorder import Usage

FORMAT = "gemini"


def gemini_error_event(message: str) -> bytes:
    """google-genai raises on a stream chunk whose JSON starts with `{"error":`."""
    return json_event({"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}})


# google-genai parses any non-`data:` line as JSON, so a comment would break it; a lone
# blank line is a valid SSE no-op that its line reader skips.
GEMINI_FRAMING = Framing(gemini_error_event, BLANK_LINE)


class GeminiAPI:
    def __init__(self, gw: Gateway) -> None:
        self.text = TextAPI(gw)
        self.counter = TokenCounter(self.text.serving)
        self.limit = gw.config.limits.max_json_body
        self.hosted = HostedTools(gw)
        self.contents = Contents(TURNS_BYTES)  # this process's recent translated contents
        self.draw = GeminiDraw(gw)
        self.speak = GeminiSpeak(gw)

    async def generate(self, request: Request, principal: Principal) -> None:
        await self._serve(request, principal, stream=False)

    async def stream(self, request: Request, principal: Principal) -> None:
        await self._serve(request, principal, stream=True)

    async def _serve(self, request: Request, principal: Principal, stream: bool) -> None:
        raw, payload = await request.json_object(self.limit)
        model = request.params["model"]
        outputs = gemini_outputs(payload)
        require(principal, outputs)  # image output needs `image`, audio `audio`

        key_id = principal.key_id if principal else ""

        def translate() -> Translation:
            result = Translation({})
            # Google's tools a translated route cannot run are named in `result`.
            canonical = gemini_to_openai_request(payload, model, result, self.contents, key_id)
            result.canonical = canonical
            canonical["stream"] = stream
            if stream:
                canonical["stream_options"] = {"include_usage": True}  # Gemini's last chunk has usage
            return result

        # A stream is relayed as server-sent events whatever `alt` the client asked for: the
        # relay reads events (and the translated routes answer them).
        query = relayed_query(request.scope.get("query_string", b""), {"alt": "sse"} if stream else None)
        # Image and audio output: upstreams that make it natively take the request as it is,
        # those with OpenAI's image or speech API an image (draw.py) or speech call (speak.py);
        # the canonical chat form cannot carry it.
        drawing = "image" in outputs
        also = frozenset({"gemini-image"}) if drawing else frozenset()
        client = ClientRequest(raw, query)
        call = DialectCall(FORMAT, payload, model, stream, client, translate, also, self.hosted, key_id)
        show = presenter(FORMAT, model, openai_to_gemini_response, _stream_translator)
        route: Route = call.route
        if drawing:
            route = self.draw.routes(payload, model, stream, route)
        if "audio" in outputs:
            route = self.speak.routes(payload, model, stream, route)
        await self.text.serve(
            request,
            principal,
            call.text_call(),
            present=show,
            framing=GEMINI_FRAMING,
            native=route,
            finish=call.finish,
        )

    async def count_tokens(self, request: Request, principal: Principal) -> None:
        raw, payload = await request.json_object(self.limit)
        model = request.params["model"]
        # `generateContentRequest` (contents with system instruction and tools) or bare `contents`.
        inner = payload.get("generateContentRequest")
        counted = inner if isinstance(inner, dict) else payload
        await self.counter.count(
            request,
            principal,
            FORMAT,
            payload,
            model,
            ClientRequest(raw, relayed_query(request.scope.get("query_string", b""))),
            lambda: gemini_to_openai_request(counted, model),
            lambda count: {"totalTokens": count},
        )


def _stream_translator(model: str, usage: Usage) -> StreamTranslator:
    return OpenAIToGeminiStream(model)


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = GeminiAPI(gw)
    out = [*gemini_embed.endpoints(gw), *gemini_models.endpoints(gw)]
    for version in ("v1beta", "v1"):
        base = f"/{version}/models/{{model}}"
        actions = ((":generateContent", api.generate), (":streamGenerateContent", api.stream))
        for action, handler in actions:
            out.append(
                Endpoint("POST", base + action, handler, family="text", style="gemini", family_by_output=True)
            )
        out.append(Endpoint("POST", base + ":countTokens", api.count_tokens, family="text", style="gemini"))
    return out
