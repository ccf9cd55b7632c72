"""A fake Stability AI upstream on 127.0.0.1 (the v2beta Stable Image wire format) that records
every request byte for byte (`received`, see media_fixtures.Received).

  POST /v2beta/stable-image/generate/{ultra,core,sd3}   multipart/form-data only (plain fields
        are sent as multipart even without a file). Fields: prompt (required), negative_prompt,
        aspect_ratio (default 1:1, see ASPECT_SIZES), seed (0 or absent -> 12345), output_format
        (png default | jpeg | webp), plus anything else (model, mode, strength, style_preset...)
        which is only recorded. An optional `image` file (image-to-image) makes the output the
        input's size instead of the aspect ratio's.
        `Accept: application/json` -> {"image": <base64>, "finish_reason", "seed"}; otherwise
        (image/*, */* or no Accept) the image bytes with Content-Type image/png|jpeg|webp and the
        headers `finish-reason` and `seed`. A prompt containing "forbidden" still answers 200,
        with finish_reason CONTENT_FILTERED.

Every route needs `Authorization: Bearer <key>`, else HTTP 401. Errors are
{"id": "<hex>", "name": "bad_request" | "unauthorized" | "internal_error", "errors": ["..."]}.

`mode`:
  ok          normal answers
  fail500     HTTP 500 internal_error
  reject400   HTTP 400 bad_request
`slow_seconds` delays every answer (there is no stream to pace).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import uuid
from dataclasses import dataclass, field

from aiohttp import web

from tests.support.loopback import LoopbackServer
from tests.support.media_fixtures import (
    IMAGE_CONTENT_TYPES,
    Received,
    first,
    image_info,
    make_image,
    read_request,
)
from tests.support.net import free_port

ASPECT_SIZES: dict[str, tuple[int, int]] = {
    "1:1": (1024, 1024),
    "16:9": (1344, 768),
    "9:16": (768, 1344),
    "3:2": (1216, 832),
    "2:3": (832, 1216),
    "4:5": (896, 1088),
    "5:4": (1088, 896),
    "21:9": (1536, 640),
    "9:21": (640, 1536),
}
DEFAULT_SEED = 12345


@dataclass
class FakeStability(LoopbackServer):
    mode: str = "ok"
    slow_seconds: float = 0.0
    received: list[Received] = field(default_factory=list)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._init_server()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v2beta/stable-image/generate/{model:ultra|core|sd3}", self._generate)

    async def _generate(self, request: web.Request) -> web.Response:
        try:
            rec = await read_request(request)
        except Exception as exc:
            rec = Received(request.path_qs, {k.lower(): v for k, v in request.headers.items()}, {}, {}, None)
            self.received.append(rec)
            return _error(400, "bad_request", f"could not parse the request body: {exc}")
        self.received.append(rec)
        if self.slow_seconds:
            await asyncio.sleep(self.slow_seconds)
        auth = rec.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[len("Bearer ") :].strip():
            return _error(401, "unauthorized", "authorization: missing or invalid API key")
        if self.mode == "fail500":
            return _error(500, "internal_error", "An unexpected server error has occurred")
        if self.mode == "reject400":
            return _error(400, "bad_request", "the upstream rejected the request")
        if not request.content_type.startswith("multipart/form-data"):
            return _error(400, "bad_request", "content-type: must be multipart/form-data")
        parsed = _parse(rec)
        if isinstance(parsed, str):
            return _error(400, "bad_request", parsed)
        prompt, fmt, seed, width, height = parsed
        finish = "CONTENT_FILTERED" if "forbidden" in prompt.lower() else "SUCCESS"
        if finish == "SUCCESS":
            digest = hashlib.sha256(f"{prompt}|{seed}".encode()).digest()
            color = (digest[0], digest[1], digest[2])
        else:
            color = (128, 128, 128)
        image = await asyncio.to_thread(make_image, width, height, fmt, color)
        if "application/json" in rec.headers.get("accept", ""):
            return web.json_response(
                {"image": base64.b64encode(image).decode(), "finish_reason": finish, "seed": seed}
            )
        return web.Response(
            body=image,
            headers={
                "Content-Type": IMAGE_CONTENT_TYPES[fmt],
                "finish-reason": finish,
                "seed": str(seed),
            },
        )


def _parse(rec: Received) -> tuple[str, str, int, int, int] | str:
    """(prompt, output format, seed, width, height) from the form, or what is wrong with it."""
    prompt = first(rec, "prompt") or ""
    if not prompt.strip():
        return "prompt: cannot be empty"
    aspect = first(rec, "aspect_ratio") or "1:1"
    if aspect not in ASPECT_SIZES:
        return f"aspect_ratio: must be one of {', '.join(ASPECT_SIZES)}"
    fmt = first(rec, "output_format") or "png"
    if fmt not in IMAGE_CONTENT_TYPES:
        return "output_format: must be one of png, jpeg, webp"
    try:
        seed = int(first(rec, "seed") or 0)
    except ValueError:
        return "seed: must be an integer"
    if not 0 <= seed <= 4294967294:
        return "seed: must be between 0 and 4294967294"
    width, height = ASPECT_SIZES[aspect]
    if "image" in rec.files:
        try:
            _, width, height = image_info(rec.files["image"][0][2])
        except Exception:
            return "image: could not be decoded"
    return prompt, fmt, seed or DEFAULT_SEED, width, height


def _error(status: int, name: str, message: str) -> web.Response:
    return web.json_response({"id": uuid.uuid4().hex, "name": name, "errors": [message]}, status=status)
