"""A fake OpenAI media upstream on 127.0.0.1 (audio and images) that speaks the real wire
format and records every request byte for byte (`received`, see media_fixtures.Received).

Routes (under /v1):
  POST audio/transcriptions, audio/translations   multipart (`file`, `model` required); answers by
        `response_format`: json (default, {"text", "usage": {"type": "duration", "seconds": 2}}),
        text, srt, vtt (text/plain, one cue), verbose_json (task, language, duration, text,
        segments; `words` only for transcriptions whose `timestamp_granularities[]` has "word")
  POST audio/speech        JSON; streams `speech_seconds` of a 440 Hz tone encoded as
        `response_format` (mp3 default, opus, aac, flac, wav, pcm at 24 kHz) in 16 KiB chunks,
        chunked transfer, pausing `slow_seconds` between chunks. With `big_speech_bytes` > 0 it
        streams that many bytes of raw PCM tone (audio/pcm) in 64 KiB chunks, made lazily.
  POST images/generations  JSON; `n` solid-colour images (colour from the prompt hash) of `size`
        ("WxH", default and "auto" 1024x1024) in `output_format` (png default, jpeg, webp).
        gpt-image* models always answer b64_json and add `usage`; other models honour
        `response_format`, whose default is "url" for dall-e* and "b64_json" otherwise. URLs point
        at this fake's GET /files/{name} (fetches are recorded in `file_gets`).
  POST images/edits        multipart `image` or repeated `image[]`, optional `mask` (must match
        the first image's size), `prompt` required; images of the first input's size unless
        `size` is given; answered like generations.

`mode`:
  ok          normal answers
  fail500     HTTP 500 with an OpenAI error body
  reject400   HTTP 400 with an OpenAI error body
  die_mid     speech: send the first chunk, then drop the connection
Speech streams cut short by the client count in `cancelled`; `streamed_bytes` totals what
speech responses wrote.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.media_fixtures import (
    AUDIO_CONTENT_TYPES,
    IMAGE_CONTENT_TYPES,
    Received,
    chunked,
    encode_tone,
    first,
    image_info,
    make_image,
    read_request,
    repeated,
    stream_audio,
    tone_pcm,
)
from tests.support.net import free_port

TRANSCRIPT = "fake transcript"
SPEECH_CHUNK = 16 * 1024
BIG_CHUNK = 64 * 1024


@dataclass
class FakeOpenAIMedia(LoopbackServer):
    mode: str = "ok"
    slow_seconds: float = 0.0
    speech_seconds: float = 1.0
    big_speech_bytes: int = 0
    received: list[Received] = field(default_factory=list)
    file_gets: list[str] = field(default_factory=list)
    cancelled: int = 0
    streamed_bytes: int = 0
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._files: dict[str, tuple[str, bytes]] = {}
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def serve_file(self, name: str, content_type: str, data: bytes) -> str:
        """Serve `data` at GET /files/{name} (an input the gateway fetches by URL); its URL."""
        self._files[name] = (content_type, data)
        return f"http://127.0.0.1:{self.port}/files/{name}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/translations", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speech)
        app.router.add_post("/v1/images/generations", self._generations)
        app.router.add_post("/v1/images/edits", self._edits)
        app.router.add_get("/files/{name}", self._file)

    async def _common(self, request: web.Request) -> tuple[Received, web.Response | None]:
        try:
            rec = await read_request(request)
        except Exception as exc:  # malformed multipart: the vendor says 400
            rec = Received(request.path_qs, {k.lower(): v for k, v in request.headers.items()}, {}, {}, None)
            self.received.append(rec)
            return rec, _error(400, f"could not parse the request body: {exc}")
        self.received.append(rec)
        if self.mode == "fail500":
            return rec, _error(500, "upstream exploded", "server_error")
        if self.mode == "reject400":
            return rec, _error(400, "upstream says the request is bad")
        return rec, None

    # ----------------------------------------------------------------- audio

    async def _transcribe(self, request: web.Request) -> web.Response:
        rec, early = await self._common(request)
        if early is not None:
            return early
        if "file" not in rec.files:
            return _error(400, "you must provide a file", param="file")
        if not first(rec, "model"):
            return _error(400, "you must provide a model parameter", param="model")
        task = "translate" if request.path.endswith("/translations") else "transcribe"
        fmt = first(rec, "response_format", "json")
        if fmt == "json":
            return web.json_response({"text": TRANSCRIPT, "usage": {"type": "duration", "seconds": 2}})
        if fmt == "text":
            return web.Response(text=TRANSCRIPT, content_type="text/plain")
        if fmt == "srt":
            return web.Response(text=f"1\n00:00:00,000 --> 00:00:01,500\n{TRANSCRIPT}\n\n")
        if fmt == "vtt":
            return web.Response(text=f"WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n{TRANSCRIPT}\n\n")
        if fmt != "verbose_json":
            return _error(400, f"unsupported response_format {fmt!r}", param="response_format")
        segment = {
            "id": 0,
            "seek": 0,
            "start": 0.0,
            "end": 1.5,
            "text": " " + TRANSCRIPT,
            "tokens": [50364, 7218, 24444, 50439],
            "temperature": 0.0,
            "avg_logprob": -0.25,
            "compression_ratio": 0.8,
            "no_speech_prob": 0.01,
        }
        body: dict[str, Any] = {
            "task": task,
            "language": "english",
            "duration": 1.5,
            "text": TRANSCRIPT,
            "segments": [segment],
        }
        if task == "transcribe" and "word" in rec.fields.get("timestamp_granularities[]", []):
            body["words"] = [
                {"word": "fake", "start": 0.0, "end": 0.7},
                {"word": "transcript", "start": 0.7, "end": 1.5},
            ]
        return web.json_response(body)

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        rec, early = await self._common(request)
        if early is not None:
            return early
        body = rec.json or {}
        if not body.get("input") or not body.get("model") or not body.get("voice"):
            return _error(400, "model, input and voice are required")
        fmt = body.get("response_format") or "mp3"
        if fmt not in AUDIO_CONTENT_TYPES:
            return _error(400, f"unsupported response_format {fmt!r}", param="response_format")
        if self.big_speech_bytes > 0:
            pieces = repeated(tone_pcm(1.0), self.big_speech_bytes, BIG_CHUNK)
            ctype = "audio/pcm"
        else:
            audio = await asyncio.to_thread(encode_tone, self.speech_seconds, fmt)
            pieces, ctype = chunked(audio, SPEECH_CHUNK), AUDIO_CONTENT_TYPES[fmt]
        return await stream_audio(request, pieces, ctype, self)

    # ----------------------------------------------------------------- images

    async def _generations(self, request: web.Request) -> web.Response:
        rec, early = await self._common(request)
        if early is not None:
            return early
        body = rec.json or {}
        if not body.get("prompt"):
            return _error(400, "prompt is required", param="prompt")
        return self._images(
            str(body.get("model") or "dall-e-2"),
            str(body["prompt"]),
            body.get("n"),
            body.get("size"),
            body.get("response_format"),
            body.get("output_format"),
            None,
            0,
        )

    async def _edits(self, request: web.Request) -> web.Response:
        rec, early = await self._common(request)
        if early is not None:
            return early
        images = rec.files.get("image", []) + rec.files.get("image[]", [])
        prompt = first(rec, "prompt")
        if not images:
            return _error(400, "image is required", param="image")
        if not prompt:
            return _error(400, "prompt is required", param="prompt")
        try:
            _, width, height = image_info(images[0][2])
        except Exception:
            return _error(400, "the image is not a valid image", param="image")
        if "mask" in rec.files:
            try:
                _, mw, mh = image_info(rec.files["mask"][0][2])
            except Exception:
                return _error(400, "the mask is not a valid image", param="mask")
            if (mw, mh) != (width, height):
                return _error(400, "mask and image must have the same dimensions", param="mask")
        return self._images(
            first(rec, "model") or "dall-e-2",
            prompt,
            first(rec, "n"),
            first(rec, "size"),
            first(rec, "response_format"),
            first(rec, "output_format"),
            (width, height),
            len(images),
        )

    def _images(
        self,
        model: str,
        prompt: str,
        n_raw: Any,
        size_raw: Any,
        response_format: Any,
        output_format: Any,
        source_size: tuple[int, int] | None,
        input_images: int,
    ) -> web.Response:
        try:
            n = int(n_raw) if n_raw not in (None, "") else 1
        except (TypeError, ValueError):
            return _error(400, f"invalid n {n_raw!r}", param="n")
        if not 1 <= n <= 10:
            return _error(400, "n must be between 1 and 10", param="n")
        if size_raw in (None, "", "auto"):
            width, height = source_size or (1024, 1024)
        else:
            try:
                w, h = str(size_raw).lower().split("x")
                width, height = int(w), int(h)
            except ValueError:
                return _error(400, f"invalid size {size_raw!r}", param="size")
        fmt = str(output_format or "png")
        if fmt not in IMAGE_CONTENT_TYPES:
            return _error(400, f"invalid output_format {fmt!r}", param="output_format")
        gpt_image = model.startswith("gpt-image")
        if gpt_image:
            kind = "b64_json"
        else:
            kind = str(response_format or ("url" if model.startswith("dall-e") else "b64_json"))
        if kind not in ("url", "b64_json"):
            return _error(400, f"invalid response_format {kind!r}", param="response_format")
        digest = hashlib.sha256(prompt.encode()).digest()
        data: list[dict[str, Any]] = []
        for i in range(n):
            color = (digest[0], digest[1], (digest[2] + 40 * i) % 256)
            image = make_image(width, height, fmt, color)
            item: dict[str, Any] = {}
            if kind == "url":
                name = f"img-{uuid.uuid4().hex}.{fmt}"
                self._files[name] = (IMAGE_CONTENT_TYPES[fmt], image)
                item["url"] = f"http://127.0.0.1:{self.port}/files/{name}"
            else:
                item["b64_json"] = base64.b64encode(image).decode()
            if model.startswith("dall-e-3"):
                item["revised_prompt"] = f"revised: {prompt}"
            data.append(item)
        out: dict[str, Any] = {"created": int(time.time()), "data": data}
        if gpt_image:
            text_tokens = max(1, len(prompt) // 4)
            image_tokens = 323 * input_images
            output_tokens = 272 * n
            out["usage"] = {
                "input_tokens": text_tokens + image_tokens,
                "output_tokens": output_tokens,
                "total_tokens": text_tokens + image_tokens + output_tokens,
                "input_tokens_details": {"text_tokens": text_tokens, "image_tokens": image_tokens},
            }
        return web.json_response(out)

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.file_gets.append(name)
        if name not in self._files:
            return web.Response(status=404, text="not found")
        ctype, data = self._files[name]
        return web.Response(body=data, content_type=ctype)


def _error(
    status: int, message: str, kind: str = "invalid_request_error", param: str | None = None
) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": param, "code": kind}}, status=status
    )
