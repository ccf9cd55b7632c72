"""The sandbox's answers to synchronous audio and image calls, in each family's wire format,
with real media: speech encoded by FFmpeg (through PyAV) and streamed as it is encoded,
transcripts timed on the uploaded audio's real, decoded duration, and Pillow images.

CPU-bound work (decoding, encoding, drawing) runs in worker threads so the event loop keeps
serving other requests. The media package (PyAV, Pillow) is imported on first use only: the
text path never pays its memory.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import math
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from unigate.edge.media_types import IMAGE_CONTENT_TYPES, SPEECH_CONTENT_TYPES
from unigate.errors import InvalidRequest
from unigate.providers.base import MediaCall, Reply
from unigate.storage import Storage, keep_image
from unigate.translate.sse import json_event
from unigate.usage.recorder import Usage

if TYPE_CHECKING:
    from unigate.edge.multipart import UploadedFile
    from unigate_sandbox.media.transcript import Transcript

LANGUAGE_NAMES = {"en": "english", "es": "spanish", "fr": "french", "de": "german", "it": "italian"}
JSON = b"application/json"
TEXT = b"text/plain; charset=utf-8"


MAX_IMAGES = 10  # OpenAI's `n` for images
MAX_SPEECH_CHARS = 4096  # OpenAI's limit on speech `input`; the sandbox holds Fish to it too
MAX_SPEECH_SECONDS = 600.0  # 4096 characters at speed 0.4; slower would be hours of audio
# Image renders at once per process: each may hold ~100 MB of pixels while it runs.
RENDER_SLOTS = 2


class SandboxMedia:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage  # images answered as `url` are stored here, served at /media/
        self._renders = asyncio.Semaphore(RENDER_SLOTS)

    async def answer(self, call: MediaCall) -> Reply:
        handler = {
            "audio.transcriptions": self._speech_to_text,
            "audio.translations": self._speech_to_text,
            "audio.speech": self._speech,
            "fish.tts": self._fish_tts,
            "fish.asr": self._fish_asr,
            "images.generations": self._images,
            "images.edits": self._images,
            "stability.generate": self._stability,
        }.get(call.op)
        if handler is None:
            raise InvalidRequest(f"The sandbox has no {call.op}.", code="unsupported_operation")
        return await handler(call)

    # --- speech to text ---------------------------------------------------------------

    async def _transcript(self, upload: UploadedFile, call: MediaCall, translate: bool) -> Transcript:
        from unigate_sandbox import media

        def work() -> Transcript:
            upload.file.seek(0)
            info = media.probe_audio(upload.file)  # type: ignore[arg-type]
            language = call.payload.get("language")
            prompt = call.payload.get("prompt")
            return media.transcribe(
                info,
                language if isinstance(language, str) else None,
                prompt if isinstance(prompt, str) else None,
                translate,
            )

        try:
            return await asyncio.to_thread(work)
        except media.AudioInvalid as exc:
            raise InvalidRequest(f"The audio file could not be decoded: {exc}", code="invalid_file") from None

    async def _speech_to_text(self, call: MediaCall) -> Reply:
        from unigate_sandbox import media

        assert call.form is not None
        upload = call.form.file("file")
        assert upload is not None
        translate = call.op == "audio.translations"
        t = await self._transcript(upload, call, translate)
        fmt = call.payload.get("response_format") or "json"
        if fmt == "text":
            return Reply(content_type=TEXT, body=(t.text + "\n").encode())
        if fmt == "srt":
            return Reply(content_type=TEXT, body=media.to_srt(t).encode())
        if fmt == "vtt":
            return Reply(content_type=TEXT, body=media.to_vtt(t).encode())
        if fmt == "json":
            usage = {"type": "duration", "seconds": math.ceil(t.duration)}
            return Reply(body=orjson.dumps({"text": t.text, "usage": usage}))
        if fmt != "verbose_json":
            raise InvalidRequest(f"The sandbox does not produce '{fmt}'.", param="response_format")
        granularities = call.payload.get("timestamp_granularities") or ["segment"]
        if isinstance(granularities, str):
            granularities = [granularities]
        out: dict[str, Any] = {
            "task": "translate" if translate else "transcribe",
            "language": LANGUAGE_NAMES.get(t.language, t.language),
            "duration": round(t.duration, 3),
            "text": t.text,
        }
        if "segment" in granularities:
            out["segments"] = [_openai_segment(s.id, s.start, s.end, s.text) for s in t.segments]
        if "word" in granularities:
            out["words"] = [{"word": w.word, "start": w.start, "end": w.end} for w in t.words]
        out["usage"] = {"type": "duration", "seconds": math.ceil(t.duration)}
        return Reply(body=orjson.dumps(out))

    async def _fish_asr(self, call: MediaCall) -> Reply:
        assert call.form is not None
        upload = call.form.file("audio")
        assert upload is not None
        t = await self._transcript(upload, call, False)
        segments = [{"text": s.text, "start": s.start, "end": s.end} for s in t.segments]
        return Reply(
            body=orjson.dumps({"text": t.text, "duration": round(t.duration, 3), "segments": segments})
        )

    # --- text to speech ---------------------------------------------------------------

    async def _speech(self, call: MediaCall) -> Reply:
        p = call.payload
        fmt = str(p.get("response_format") or "mp3")
        voice = p.get("voice")
        voice_name = voice if isinstance(voice, str) else str((voice or {}).get("id", "alloy"))
        speed = float(p.get("speed") or 1.0)
        text = str(p["input"])
        _check_speech(text, speed, "input")
        usage = Usage(prompt_tokens=max(1, len(text) // 4))
        if p.get("stream_format") == "sse":
            stream = _speech_events(_encoded(text, voice_name, speed, fmt, 24_000), usage.prompt_tokens)
            return Reply(content_type=b"text/event-stream", stream=stream, usage=usage)
        content_type = SPEECH_CONTENT_TYPES[fmt].encode()
        return Reply(
            content_type=content_type, stream=_encoded(text, voice_name, speed, fmt, 24_000), usage=usage
        )

    async def _fish_tts(self, call: MediaCall) -> Reply:
        p = call.payload
        fmt = str(p.get("format") or "mp3")
        rate = 48_000 if fmt == "opus" else int(p.get("sample_rate") or 44_100)
        speed = (
            float((p.get("prosody") or {}).get("speed") or 1.0) if isinstance(p.get("prosody"), dict) else 1.0
        )
        voice = str(p.get("reference_id") or call.model)
        speed = max(0.25, min(speed, 4.0))
        _check_speech(str(p["text"]), speed, "text")
        stream = _encoded(str(p["text"]), voice, speed, fmt, rate)
        return Reply(content_type=SPEECH_CONTENT_TYPES[fmt].encode(), stream=stream)

    # --- images -------------------------------------------------------------------------

    async def _images(self, call: MediaCall) -> Reply:
        from unigate_sandbox import media

        p = call.payload
        prompt = str(p["prompt"])
        n = _count(p.get("n"))  # a form sends it as text
        if not 1 <= n <= MAX_IMAGES:
            raise InvalidRequest(
                f"Invalid value for 'n': an integer from 1 to {MAX_IMAGES}.", param="n", code="invalid_value"
            )
        fmt = str(p.get("output_format") or "png")
        try:
            size: tuple[int, int] | None = media.parse_size(p.get("size")) if p.get("size") else None
        except ValueError as exc:
            raise InvalidRequest(str(exc), param="size", code="invalid_value") from None
        sources: list[bytes] = []
        mask = None
        if call.form is not None:
            sources = [u.read() for u in call.form.files.get("image", [])]
            mask_file = call.form.file("mask")
            mask = mask_file.read() if mask_file is not None else None
            _check_uploads(sources, mask)  # from the headers: refused before anything is decoded

        def render(i: int) -> bytes:
            if sources:
                return media.edit_image(sources, f"{prompt} #{i}" if i else prompt, mask, size, fmt)
            return media.generate_image(
                prompt,
                size or (1024, 1024),
                fmt,
                seed=i,
                quality=p.get("quality"),
                style=p.get("style"),
                background=p.get("background"),
            )

        try:
            async with self._renders:
                images = [await asyncio.to_thread(render, i) for i in range(n)]
        except (media.ImageInvalid, ValueError) as exc:
            raise InvalidRequest(f"The image could not be processed: {exc}", param="image") from None
        as_url = p.get("response_format") == "url"
        urls = []
        if as_url:
            urls = [call.public_base + await keep_image(self.storage, image, fmt) for image in images]
        width, height = media.image_info(images[0])[1:]
        usage = _image_usage(prompt, [media.image_info(source)[1:] for source in sources], n)

        def body() -> bytes:
            # Megabytes of base64, encoded in a worker thread and one image per call: a single
            # orjson call over all of them would hold the GIL (and stall the event loop) longer.
            items = [
                orjson.dumps({"url": url, "revised_prompt": prompt})
                if as_url
                else orjson.dumps({"b64_json": base64.b64encode(image).decode(), "revised_prompt": prompt})
                for url, image in zip(urls or [""] * len(images), images, strict=True)
            ]
            size = f"{width}x{height}"
            rest: dict[str, Any] = {"output_format": fmt, "usage": usage}
            if size in _GPT_IMAGE_SIZES:
                rest["size"] = size
            head = b'{"created":' + str(int(time.time())).encode() + b',"data":['
            return head + b",".join(items) + b"]," + orjson.dumps(rest)[1:]

        return Reply(body=await asyncio.to_thread(body))

    async def _stability(self, call: MediaCall) -> Reply:
        from unigate_sandbox import media

        p = call.payload
        prompt = str(p["prompt"])
        fmt = str(p.get("output_format") or "png")
        seed = (
            int(p.get("seed") or 0)
            or int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big") % 4_294_967_294
        )
        source = call.form.file("image") if call.form is not None else None
        if source is not None:
            _check_uploads([source.read()], None)

        def render() -> bytes:
            if source is not None:
                return media.edit_image([source.read()], prompt, None, None, fmt)
            size = media.aspect_size(p.get("aspect_ratio"))
            return media.generate_image(prompt, size, fmt, seed=seed, style=p.get("style_preset"))

        try:
            async with self._renders:
                image = await asyncio.to_thread(render)
        except (media.ImageInvalid, ValueError) as exc:
            raise InvalidRequest(f"The image could not be processed: {exc}") from None
        if "application/json" in call.accept:
            payload = {"image": base64.b64encode(image).decode(), "finish_reason": "SUCCESS", "seed": seed}
            return Reply(body=orjson.dumps(payload))
        headers = [(b"finish-reason", b"SUCCESS"), (b"seed", str(seed).encode())]
        return Reply(content_type=IMAGE_CONTENT_TYPES[fmt].encode(), body=image, headers=headers)


# The sizes OpenAI reports in an image answer's `size` (its GPT image models make only these);
# another size the sandbox drew is not reported, as OpenAI's other image models report none.
_GPT_IMAGE_SIZES = frozenset({"1024x1024", "1024x1536", "1536x1024"})


def _image_usage(prompt: str, sources: list[tuple[int, int]], n: int) -> dict[str, Any]:
    """Token usage as GPT image models report it: the prompt's text tokens and the input images'
    tokens (deterministic: 65 + 129 per 512-pixel tile of each), 1056 out per image."""
    text = max(1, len(prompt) // 4)
    image = sum(65 + 129 * math.ceil(w / 512) * math.ceil(h / 512) for w, h in sources)
    output = 1056 * n
    return {
        "input_tokens": text + image,
        "input_tokens_details": {"text_tokens": text, "image_tokens": image},
        "output_tokens": output,
        "total_tokens": text + image + output,
    }


def _count(value: object) -> int:
    """`n` as an int (1 when absent), or -1 when it is not a whole number."""
    if value is None or value == "":
        return 1
    if isinstance(value, bool | float) or not isinstance(value, int | str):
        return -1
    try:
        return int(value)
    except ValueError:
        return -1


def _check_speech(text: str, speed: float, param: str) -> None:
    from unigate_sandbox import media

    if len(text) > MAX_SPEECH_CHARS:
        raise InvalidRequest(
            f"'{param}' is {len(text)} characters; the sandbox speaks at most {MAX_SPEECH_CHARS}.",
            param=param,
            code="invalid_value",
        )
    try:
        seconds = media.speech_duration(text, speed)
    except ValueError as exc:
        raise InvalidRequest(str(exc), param="speed", code="invalid_value") from None
    if seconds > MAX_SPEECH_SECONDS:
        raise InvalidRequest(
            f"This text at this speed is {seconds:.0f} s of audio; the sandbox makes at most "
            f"{MAX_SPEECH_SECONDS:.0f} s (speak faster or send less text).",
            param="speed",
            code="invalid_value",
        )


def _check_uploads(sources: list[bytes], mask: bytes | None) -> None:
    from unigate_sandbox import media

    try:
        for data in sources:
            media.check_edit_input(data, "image")
        if mask is not None:
            media.check_edit_input(mask, "mask")
    except media.ImageInvalid as exc:
        raise InvalidRequest(
            f"The image could not be processed: {exc}", param="image", code="invalid_value"
        ) from None


def _openai_segment(i: int, start: float, end: float, text: str) -> dict[str, Any]:
    return {
        "id": i,
        "seek": 0,
        "start": start,
        "end": end,
        "text": text,
        "tokens": [],
        "temperature": 0.0,
        "avg_logprob": -0.2,
        "compression_ratio": 1.2,
        "no_speech_prob": 0.01,
    }


async def _encoded(text: str, voice: str, speed: float, fmt: str, rate: int) -> AsyncIterator[bytes]:
    """Audio chunks as the encoder produces them, each step in a worker thread."""
    from unigate_sandbox import media

    total = round(media.speech_duration(text, speed) * rate)
    chunks: Iterator[bytes] = media.encode_stream(
        media.synthesize(text, voice, speed, rate), fmt, rate, total_samples=total
    )
    while True:
        chunk = await asyncio.to_thread(next, chunks, None)
        if chunk is None:
            return
        if chunk:
            yield chunk


async def _speech_events(audio: AsyncIterator[bytes], input_tokens: int) -> AsyncIterator[bytes]:
    """`stream_format: sse`: base64 audio deltas, then a done event with usage."""
    output = 0
    async for chunk in audio:
        output += 1
        event = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}
        yield json_event(event)
    usage = {"input_tokens": input_tokens, "output_tokens": output, "total_tokens": input_tokens + output}
    yield json_event({"type": "speech.audio.done", "usage": usage})
