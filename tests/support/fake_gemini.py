"""A fake Gemini API upstream on 127.0.0.1: `:generateContent` JSON,
`:streamGenerateContent?alt=sse` events framed with CRLF as Google sends them, and
`:countTokens`, and `:batchEmbedContents` (a vector made from each text's length). Given
audio (an `inlineData` audio part), it answers how many bytes of which type it heard.

Asked for IMAGE output, it draws as Gemini's image models do: a PNG of the asked
`imageConfig.aspectRatio` (Gemini 2.5 Flash Image's sizes, an eighth of them; square without
one; an unknown ratio is a 400), or of the first input image's size when the prompt brings
images (an edit), with 1290 output tokens and the prompt's tokens split by modality. A prompt
with "forbidden" is blocked (`promptFeedback.blockReason`, no candidates); one with "unsafe
picture" ends with `finishReason: IMAGE_SAFETY` and no image; one with "words only" is
answered with text alone (`NO_IMAGE`).

Asked for AUDIO output, it speaks as Gemini's TTS models do: a 440 Hz tone as raw 16-bit PCM
at 24 kHz (`audio/L16;codec=pcm;rate=24000`), a tenth of a second per word, 25 tokens a second;
a `voiceName` that is not one of Gemini's is a 400, and "forbidden" text is blocked.

With a `googleSearch` tool (and no function to call) the answer is grounded as Google grounds
it: `groundingMetadata` with the queries, the pages and the spans they support, offsets in
UTF-8 bytes (the answer has non-ASCII text), on the last event of a stream."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.net import free_port


@dataclass
class FakeGemini(LoopbackServer):
    mode: str = "ok"  # ok | die_mid | slow (pause `slow_seconds` between events)
    slow_seconds: float = 0.5
    cancelled: int = 0
    text: str = "Hello from the fake Gemini upstream"
    # (name, args): call this declared function instead of the first one with {"city": "Paris"}.
    tool_call: tuple[str, dict[str, Any]] | None = None
    received: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)  # request bodies as sent
    models: tuple[str, ...] = ("gemini-fake-1",)  # what `GET /v1beta/models` lists
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1beta/models/{call}", self._call)
        app.router.add_get("/v1beta/models", self._models)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        methods = ["generateContent", "countTokens"]
        data = [{"name": f"models/{m}", "supportedGenerationMethods": methods} for m in self.models]
        return web.json_response({"models": data})

    def _parts(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        last = body["contents"][-1]["parts"]
        heard = [
            _field(p, "inlineData")
            for p in last
            if str((_field(p, "inlineData") or {}).get("mimeType", "")).startswith("audio/")
        ]
        if heard:  # it "hears" the audio: says how much, in English when asked to translate
            said = f"I heard {len(base64.b64decode(heard[0]['data']))} bytes of {heard[0]['mimeType']}."
            english = any("into English" in str(p.get("text", "")) for p in last)
            return [{"text": ("(English) " if english else "") + said}], "STOP"
        answer = next(
            (_field(p, "functionResponse") for p in last if _field(p, "functionResponse") is not None), None
        )
        tools = body.get("tools") or []
        declared = [d for tool in tools for d in _field(tool, "functionDeclarations") or []]
        if any(_field(t, "googleSearch") is not None for t in tools) and not declared and answer is None:
            return [{"text": GROUNDED}], "STOP"  # Google runs its own search upstream
        if declared and answer is None:
            name = declared[0]["name"]
            return [{"functionCall": {"name": name, "args": {"city": "Paris"}}}], "STOP"
        text = f"The tool said: {orjson.dumps(answer['response']).decode()}" if answer else self.text
        return [{"text": text}], "STOP"

    async def _call(self, request: web.Request) -> web.StreamResponse:
        call = request.match_info["call"]
        raw = await request.read()
        body = orjson.loads(raw)
        self.raw.append(raw)
        self.received.append((call + "?" + request.query_string, body, dict(request.headers)))
        if call.endswith(":batchEmbedContents"):
            return _embedded(call.split(":")[0], body)
        if call.endswith(":embedContent"):  # one content: the batch's rules, answered alone
            model = call.split(":")[0]
            return _embedded(model, {"requests": [{"model": f"models/{model}", **body}]}, single=True)
        if call.endswith(":countTokens"):
            # Gemini's count: `totalTokens`; one per byte of the body, to tell it from an estimate.
            return web.json_response({"totalTokens": 2000 + len(raw)})
        config = _field(body, "generationConfig") or {}
        modalities = _field(config, "responseModalities") or []
        if "IMAGE" in modalities and call.endswith(":generateContent"):
            return _drawn(body, config)
        if "AUDIO" in modalities and call.endswith(":generateContent"):
            return _spoken(body, config)
        parts, finish = self._parts(body)
        parts = self._scripted(body, parts)
        usage = {"promptTokenCount": 17, "candidatesTokenCount": 8, "totalTokenCount": 25}
        grounding = {"groundingMetadata": grounding_metadata()} if parts[0].get("text") == GROUNDED else {}
        if call.endswith(":generateContent"):
            return web.json_response(
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": parts},
                            "finishReason": finish,
                            "index": 0,
                            **grounding,
                        }
                    ],
                    "usageMetadata": usage,
                    "modelVersion": call.split(":")[0],
                    "responseId": "resp-1",
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        pieces: list[dict[str, Any]] = (
            [{"text": w + " "} for w in parts[0]["text"].split(" ")] if "text" in parts[0] else parts
        )
        try:
            for i, part in enumerate(pieces):
                if self.mode == "die_mid" and i == 2:
                    assert request.transport is not None
                    request.transport.close()
                    return resp
                event: dict[str, Any] = {
                    "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                    # Gemini repeats running usage on every chunk; the prompt count is known early.
                    "usageMetadata": {
                        "promptTokenCount": usage["promptTokenCount"],
                        "candidatesTokenCount": i + 1,
                    },
                    "responseId": "resp-1",
                }
                if i == len(pieces) - 1:
                    event["candidates"][0].update(finishReason=finish, **grounding)
                    event["usageMetadata"] = usage
                await resp.write(b"data: " + orjson.dumps(event) + b"\r\n\r\n")
                await asyncio.sleep(self.slow_seconds if self.mode == "slow" else 0)
        except (asyncio.CancelledError, ConnectionResetError):
            self.cancelled += 1
            raise
        return resp

    def _scripted(self, body: dict[str, Any], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The scripted `tool_call` in place of the default function call, when declared."""
        tools = body.get("tools") or []
        declared = {d.get("name") for tool in tools for d in _field(tool, "functionDeclarations") or []}
        if "functionCall" not in parts[0] or self.tool_call is None or self.tool_call[0] not in declared:
            return parts
        name, args = self.tool_call
        return [{"functionCall": {"name": name, "args": args}}]


# Gemini 2.5 Flash Image's output sizes by aspect ratio, divided by 8.
IMAGE_SIZES = {
    "1:1": (128, 128),
    "2:3": (104, 156),
    "3:2": (156, 104),
    "3:4": (108, 148),
    "4:3": (148, 108),
    "4:5": (112, 144),
    "5:4": (144, 112),
    "9:16": (96, 168),
    "16:9": (168, 96),
    "21:9": (192, 84),
}


def _drawn(body: dict[str, Any], config: dict[str, Any]) -> web.Response:
    """An image model's answer (the module's docstring says how it draws)."""
    from tests.support.media_fixtures import image_info, make_image

    parts = [p for content in body["contents"] for p in content.get("parts") or []]
    prompt = " ".join(str(p["text"]) for p in parts if "text" in p)
    inputs = [base64.b64decode(_field(p, "inlineData")["data"]) for p in parts if _field(p, "inlineData")]
    ratio = (_field(config, "imageConfig") or {}).get("aspectRatio")
    if ratio is not None and ratio not in IMAGE_SIZES:
        message = (
            f"* GenerateContentRequest.generation_config.image_config.aspect_ratio: unsupported value {ratio}"
        )
        error = {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
        return web.json_response({"error": error}, status=400)
    counts = {"TEXT": 9, "IMAGE": 258 * len(inputs)}
    details = [{"modality": m, "tokenCount": n} for m, n in counts.items() if n]
    prompt_tokens = sum(counts.values())
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens, "promptTokensDetails": details}
    if "forbidden" in prompt:
        return web.json_response(
            {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": usage}
        )
    width, height = image_info(inputs[0])[1:] if inputs else IMAGE_SIZES[ratio or "1:1"]
    image = {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(make_image(width, height)).decode()}
    }
    parts, finish = [{"text": "Here it is."}, image], "STOP"
    if "unsafe picture" in prompt:
        parts, finish = [], "IMAGE_SAFETY"
    elif "words only" in prompt:
        parts, finish = [{"text": "I can only describe it."}], "NO_IMAGE"
    output = 1290 if parts and parts[-1] is image else 0
    usage.update(candidatesTokenCount=output, totalTokenCount=prompt_tokens + output)
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
    return web.json_response({"candidates": [candidate], "usageMetadata": usage, "responseId": "img-1"})


def _embedded(model: str, body: dict[str, Any], single: bool = False) -> web.Response:
    """`:batchEmbedContents`: a vector per request (`outputDimensionality` long, 8 by default)
    made from its text; at most 100 requests, each naming the path's model, as Google requires."""
    requests = body.get("requests") or []
    problem = "at most 100 requests are allowed" if len(requests) > 100 else None
    for request in requests:
        if request.get("model") != f"models/{model}":
            problem = f"request model {request.get('model')} does not match models/{model}"
    if problem:
        return web.json_response(
            {"error": {"code": 400, "message": problem, "status": "INVALID_ARGUMENT"}}, status=400
        )
    vectors = []
    for request in requests:
        text = " ".join(p["text"] for p in request["content"]["parts"])
        size = request.get("outputDimensionality") or 8
        vectors.append({"values": [round((len(text) + i) / 100, 2) for i in range(size)]})
    return web.json_response({"embedding": vectors[0]} if single else {"embeddings": vectors})


GEMINI_VOICES = frozenset({"Kore", "Puck", "Zephyr", "Charon", "Fenrir", "Leda", "Aoede", "Sulafat"})


def _spoken(body: dict[str, Any], config: dict[str, Any]) -> web.Response:
    """A TTS model's answer (the module's docstring says how it speaks)."""
    from tests.support.media_fixtures import tone_pcm

    text = " ".join(str(p["text"]) for c in body["contents"] for p in c.get("parts") or [] if "text" in p)
    voice = (
        ((_field(config, "speechConfig") or {}).get("voiceConfig") or {}).get("prebuiltVoiceConfig") or {}
    ).get("voiceName")
    if voice is not None and voice not in GEMINI_VOICES:
        error = {
            "code": 400,
            "message": f"Voice name {voice} is not supported.",
            "status": "INVALID_ARGUMENT",
        }
        return web.json_response({"error": error}, status=400)
    usage: dict[str, Any] = {"promptTokenCount": 9}
    if "forbidden" in text:
        return web.json_response(
            {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": usage}
        )
    seconds = 0.1 * len(text.split())
    audio = {
        "inlineData": {
            "mimeType": "audio/L16;codec=pcm;rate=24000",
            "data": base64.b64encode(tone_pcm(seconds)).decode(),
        }
    }
    usage.update(candidatesTokenCount=round(25 * seconds), totalTokenCount=9 + round(25 * seconds))
    candidate = {"content": {"role": "model", "parts": [audio]}, "finishReason": "STOP", "index": 0}
    return web.json_response({"candidates": [candidate], "usageMetadata": usage, "responseId": "tts-1"})


def _field(obj: dict[str, Any], name: str) -> Any:
    """A request field by its JSON name or its proto field name (`functionDeclarations` or
    `function_declarations`): the Gemini API takes either, and clients send both (LiteLLM the
    second)."""
    if name in obj:
        return obj[name]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in name))


GROUNDED = "Selon la recherche, la marée haute à Brest est à midi."
SUPPORTED = "la marée haute à Brest est à midi"
SEARCH_PAGE = "https://fake-gemini.test/marees"


def grounding_metadata() -> dict[str, Any]:
    start = len(GROUNDED[: GROUNDED.index(SUPPORTED)].encode())
    return {
        "webSearchQueries": ["marée Brest"],
        "searchEntryPoint": {"renderedContent": "<div class='container'></div>"},
        "groundingChunks": [{"web": {"uri": SEARCH_PAGE, "title": "fake-gemini.test"}}],
        "groundingSupports": [
            {
                "segment": {
                    "startIndex": start,
                    "endIndex": start + len(SUPPORTED.encode()),
                    "text": SUPPORTED,
                },
                "groundingChunkIndices": [0],
            }
        ],
    }
