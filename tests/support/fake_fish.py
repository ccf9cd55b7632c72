"""A fake Fish Audio upstream on 127.0.0.1 (https://api.fish.audio wire format) that records
every request byte for byte (`received`, see media_fixtures.Received).

Every route needs `Authorization: Bearer <key>`, else HTTP 401 {"status": 401, "message"}.

  POST /v1/tts   JSON {text (required), format (mp3 default | wav | pcm | opus), sample_rate,
                 reference_id, ...}; the `model` request header (e.g. "speech-1.6") picks the
                 model and is only recorded. Streams `speech_seconds` of a 440 Hz tone encoded as
                 `format` at `sample_rate` (default 44100; opus is always 48 kHz) with chunked
                 transfer, 16 KiB chunks, pausing `slow_seconds` between them. Content types:
                 audio/mpeg, audio/wav, audio/pcm, audio/ogg.
  POST /v1/asr   multipart `audio` file (required), `language`, `ignore_timestamps`. The upload
                 is decoded with PyAV for its real duration (undecodable -> 400); answers
                 {"text": "fake fish transcript", "duration": <seconds>, "segments": [one
                 segment {"text", "start": 0.0, "end": <duration>}]}. The single segment is sent
                 whatever `ignore_timestamps` says (Fish's default is true).

`mode`:
  ok          normal answers
  fail500     HTTP 500 {"status": 500, "message"}
  reject400   HTTP 400 {"status": 400, "message"}
  die_mid     tts: send the first chunk, then drop the connection
TTS streams cut short by the client count in `cancelled`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.media_fixtures import (
    Received,
    chunked,
    decode_audio,
    encode_tone,
    read_request,
    stream_audio,
)
from tests.support.net import free_port

TRANSCRIPT = "fake fish transcript"
CONTENT_TYPES: dict[str, str] = {
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
    "opus": "audio/ogg",
}
CHUNK = 16 * 1024


@dataclass
class FakeFish(LoopbackServer):
    mode: str = "ok"
    slow_seconds: float = 0.0
    speech_seconds: float = 1.0
    received: list[Received] = field(default_factory=list)
    cancelled: int = 0
    streamed_bytes: int = 0
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/tts", self._tts)
        app.router.add_post("/v1/asr", self._asr)

    async def _common(self, request: web.Request) -> tuple[Received, web.Response | None]:
        try:
            rec = await read_request(request)
        except Exception as exc:
            rec = Received(request.path_qs, {k.lower(): v for k, v in request.headers.items()}, {}, {}, None)
            self.received.append(rec)
            return rec, _error(400, f"could not parse the request body: {exc}")
        self.received.append(rec)
        auth = rec.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[len("Bearer ") :].strip():
            return rec, _error(401, "Invalid or missing API key")
        if self.mode == "fail500":
            return rec, _error(500, "Internal server error")
        if self.mode == "reject400":
            return rec, _error(400, "The request was rejected by the upstream")
        return rec, None

    async def _tts(self, request: web.Request) -> web.StreamResponse:
        rec, early = await self._common(request)
        if early is not None:
            return early
        body = rec.json or {}
        if not isinstance(body.get("text"), str) or not body["text"]:
            return _error(400, "text is required")
        fmt = body.get("format") or "mp3"
        if fmt not in CONTENT_TYPES:
            return _error(400, f"unsupported format {fmt!r}")
        rate = body.get("sample_rate") or 44100
        if not isinstance(rate, int) or not 8000 <= rate <= 48000:
            return _error(400, f"unsupported sample_rate {rate!r}")
        audio = await asyncio.to_thread(encode_tone, self.speech_seconds, fmt, rate)
        return await stream_audio(request, chunked(audio, CHUNK), CONTENT_TYPES[fmt], self)

    async def _asr(self, request: web.Request) -> web.Response:
        rec, early = await self._common(request)
        if early is not None:
            return early
        if "audio" not in rec.files:
            return _error(400, "audio is required")
        data = rec.files["audio"][0][2]
        try:
            _, _, duration = await asyncio.to_thread(decode_audio, data)
        except Exception:
            return _error(400, "Failed to decode the audio")
        duration = round(duration, 3)
        return web.json_response(
            {
                "text": TRANSCRIPT,
                "duration": duration,
                "segments": [{"text": TRANSCRIPT, "start": 0.0, "end": duration}],
            }
        )


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"status": status, "message": message}, status=status)
