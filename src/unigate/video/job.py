"""The canonical video job: what every video path family (OpenAI videos, the unified
`/v1/video/generations`, Kling's and Veo's native paths) turns its request into, and what
every video adapter (openai, kling, vidu, gemini, sandbox) builds its upstream call from.

`TaskSubmission.fields` of a video job holds these keys (absent or None when not given):

    prompt            str     the text prompt ("" for image-only jobs)
    negative_prompt   str
    seconds           float   duration
    width, height     int     output size in pixels
    size              str     "WxH" as the client sent it (OpenAI), when it did
    aspect_ratio      str     "16:9" | "9:16" | "1:1" ... (Kling, Veo)
    fps               int
    seed              int
    image             str     the start image: an http(s) URL, a data: URL, or raw base64
                              (Kling); an uploaded file arrives as `TaskSubmission.files["image"]`
    image_tail        str     Kling's end frame, same forms
    mode              str     Kling's std | pro
    cfg_scale         float
    metadata          dict    vendor fields passed through (unified `metadata`, Kling extras)
    native            dict    the client's own body when it used a vendor's format
    native_format     str     openai | unified | kling | veo: the format `native` is in
    remix_of          str     for action "remix": the source job's upstream id
    external_task_id  str     Kling's client-chosen id

Actions: `text2video`, `image2video` (a start image is given) and `remix`. An adapter whose
upstream speaks `native_format` sends `native` (model id mapped) rather than rebuilding it.
"""

from __future__ import annotations

from typing import Any

VIDEO_ACTIONS = ("text2video", "image2video", "remix")
DEFAULT_SECONDS = 4.0
DEFAULT_SIZE = (720, 1280)


def video_size(fields: dict[str, Any], default: tuple[int, int] = DEFAULT_SIZE) -> tuple[int, int]:
    """(width, height) of a job: explicit size, else from the aspect ratio at 720p, else default."""
    width, height = fields.get("width"), fields.get("height")
    if isinstance(width, int) and isinstance(height, int):
        return width, height
    ratio = fields.get("aspect_ratio")
    if isinstance(ratio, str) and ":" in ratio:
        a, _, b = ratio.partition(":")
        if ratio.isascii() and a.isdigit() and b.isdigit() and int(a) > 0 and int(b) > 0:
            w, h = int(a), int(b)
            # 720 on the short side, both sides even (H.264 wants even sizes).
            if w >= h:
                return _even(720 * w / h), 720
            return 720, _even(720 * h / w)
    return default


def video_seconds(fields: dict[str, Any], default: float = DEFAULT_SECONDS) -> float:
    value = fields.get("seconds")
    return float(value) if isinstance(value, int | float) and value > 0 else default


def _even(value: float) -> int:
    return max(2, round(value / 2) * 2)
