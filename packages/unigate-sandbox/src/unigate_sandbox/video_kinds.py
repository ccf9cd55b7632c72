"""The sandbox's video jobs (text2video, image2video, remix): an H.264 MP4 of the requested
size and duration drawn from the prompt (starting from the reference image when one is
given), with a WebP thumbnail and a JPEG spritesheet, as `/media/` files."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from unigate.edge.media_types import sniff_image
from unigate.errors import InvalidRequest
from unigate.providers.base import TaskSubmission
from unigate.video.job import video_seconds, video_size
from unigate.webhooks.fetch import decode_data_url
from unigate_sandbox.tasks import InputStore, Rendered

MAX_SECONDS = 20.0
MAX_SIDE = 1920
MIN_SIDE = 64
MAX_IMAGE = 20 * 1024 * 1024
# Each family's default picture when the request names no size.
_DEFAULT_SIZE = {"openai-video": (720, 1280), "veo": (1280, 720), "kling": (1280, 720)}


def _even_fit(width: int, height: int) -> tuple[int, int]:
    """The size scaled into the sandbox's bounds, both sides even (H.264 wants that)."""
    scale = min(1.0, MAX_SIDE / max(width, height))
    w, h = max(MIN_SIDE, int(width * scale)), max(MIN_SIDE, int(height * scale))
    return w - w % 2, h - h % 2


class VideoKind:
    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        fields = job.fields
        seconds = video_seconds(fields, 8.0 if job.family == "veo" else 5.0 if job.family == "kling" else 4.0)
        if seconds > MAX_SECONDS:
            raise InvalidRequest(
                f"The sandbox makes videos of at most {MAX_SECONDS:g} seconds.",
                param="seconds",
                code="invalid_value",
            )
        width, height = _even_fit(*video_size(fields, _DEFAULT_SIZE.get(job.family, (1280, 720))))
        prepared: dict[str, Any] = {
            "width": width,
            "height": height,
            "seconds": seconds,
            "fps": min(int(fields.get("fps") or 24), 30),
            "seed": int(fields.get("seed") or 0),
        }
        image = await self._image(job, inputs)
        if image is not None:
            prepared["files"] = {"image": await inputs.save("image", image)}
        elif job.action == "remix" and fields.get("remix_of"):
            # A remix starts from the source video's middle frame (its thumbnail), copied now:
            # the source may be deleted before the remix renders.
            source = await inputs.copy_media(f"{fields['remix_of']}-thumb.webp", "image")
            prepared["files"] = {"image": source} if source else {}
        return prepared

    async def _image(self, job: TaskSubmission, inputs: InputStore) -> bytes | None:
        upload = job.files.get("image")
        if upload is not None:
            data = upload.data
        else:
            ref = job.fields.get("image")
            if not isinstance(ref, str) or not ref:
                return None
            if ref.startswith(("http://", "https://")):
                data = await inputs.fetch(ref, MAX_IMAGE, "image")
            elif ref.startswith("data:"):
                data = decode_data_url(ref, "image")
            else:  # Kling sends raw base64
                try:
                    data = base64.b64decode(ref, validate=True)
                except (binascii.Error, ValueError):  # ValueError: characters outside ASCII
                    raise InvalidRequest("'image' is not a URL or base64 data.", param="image") from None
        if sniff_image(data[:64]) not in ("png", "jpeg", "webp"):
            raise InvalidRequest(
                "The start image is not a PNG, JPEG or WebP image.", param="image", code="invalid_image"
            )
        return data

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        from unigate_sandbox.media.video import render_video, video_spritesheet, video_thumbnail

        p = record["prepared"]
        start = files.get("image")
        prompt = str(record["fields"].get("prompt") or "")
        video = render_video(
            prompt, p["width"], p["height"], p["seconds"], fps=p["fps"], seed=p["seed"], start_image=start
        )
        out = Rendered([])
        out.outputs.append(
            {
                "id": job_id,
                "url": out.add(f"{job_id}.mp4", video),
                "thumbnail_url": out.add(f"{job_id}-thumb.webp", video_thumbnail(video, "webp")),
                "spritesheet_url": out.add(f"{job_id}-sprite.jpg", video_spritesheet(video)),
                "duration": p["seconds"],
                "width": p["width"],
                "height": p["height"],
                "fps": p["fps"],
                "content_type": "video/mp4",
            }
        )
        return out
