"""The asynchronous families' endpoints (music, video, Kling, Vidu, Veo, PicWish) with a
valid request each and the bad values aimed at the fields each handler reads."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.support.corpus_model import DELETE, FieldCase, FilePart, Target
from tests.support.corpus_targets import HUGE, INF, NEG, NOT_B64, PNG, numbers
from tests.support.media_fixtures import encode_tone, make_image

Cases = list[FieldCase]
BAD_DATA_URL = "data:image/png;base64," + NOT_B64


def png_data_url() -> str:
    return "data:image/png;base64," + base64.b64encode(make_image(64, 64)).decode()


def _png() -> FilePart:
    return ("in.png", "image/png", make_image(64, 64))


def music_targets() -> list[tuple[Target, Cases]]:
    submit = Target(
        "music",
        "music",
        "/suno/submit/music",
        {"prompt": "la la la", "tags": "pop", "title": "corpus", "mv": "chirp-v3-5"},
        required="prompt",
    )
    lyrics = Target(
        "music", "music", "/suno/submit/lyrics", {"prompt": "a song about rain"}, required="prompt"
    )
    upload = Target(
        "music",
        "music",
        "/suno/upload/audio",
        {"title": "t"},
        {"file": ("a.wav", "audio/wav", encode_tone(0.3, "wav"))},
        form=True,
        json_too=True,
        text="title",
        required="file",
    )
    fetch = Target(
        "music",
        "music",
        "/suno/fetch",
        {"ids": ["00000000-0000-0000-0000-000000000000"]},
        text="ids.0",
        required="ids",
    )
    return [
        (submit, [
            ("prompt_object", "prompt", {}), ("tags_array", "tags", []), ("title_number", "title", 5),
            ("mv_object", "mv", {}), ("mv_unknown", "mv", "chirp-v99"), ("task_object", "task", {}),
            ("title_too_long", "title", "t" * 201), ("prompt_and_description_missing", "prompt", DELETE),
            *numbers("continue_at"), ("continue_clip_id_object", "continue_clip_id", {}),
            ("continue_clip_id_not_uuid", "continue_clip_id", "clip"),
            ("make_instrumental_string", "make_instrumental", "yes"),
            ("notify_hook_object", "notify_hook", {}),
            ("notify_hook_file_url", "notify_hook", "file:///etc/passwd"),
            ("prompt_nul", "prompt", "a\x00b"),
        ]),
        (lyrics, [("prompt_object", "prompt", {}), ("mv_array", "mv", []), ("prompt_blank", "prompt", "  "),
                  ("notify_hook_number", "notify_hook", 5)]),
        (upload, []),
        (fetch, [("ids_string", "ids", "x"), ("ids_numbers", "ids", [5]), ("ids_objects", "ids", [{}]),
                 ("ids_too_many", "ids", ["x"] * 201), ("action_object", "action", {})]),
    ]  # fmt: skip


def upload_json_cases() -> Cases:
    """/suno/upload/audio's JSON form ({"url": ...})."""
    return [("url_object", "url", {}), ("url_number", "url", 5),
    ("url_file_scheme", "url", "file:///etc/passwd"),
            ("url_loopback", "url", "http://127.0.0.1:1/a.wav")]  # fmt: skip


def video_targets() -> list[tuple[Target, Cases]]:
    videos = Target(
        "video",
        "openai",
        "/v1/videos",
        {"prompt": "a cat", "model": "sandbox-video"},
        json_too=True,
        required="prompt",
    )
    videos_form = Target(
        "video",
        "openai",
        "/v1/videos",
        {"prompt": "a cat", "model": "sandbox-video"},
        {"input_reference": _png()},
        form=True,
        json_too=True,
        required="prompt",
    )
    unified = Target(
        "video", "openai", "/v1/video/generations", {"model": "sandbox-video", "prompt": "a cat"}
    )
    text2video = Target(
        "kling", "kling", "/kling/v1/videos/text2video", {"prompt": "a cat"}, required="prompt"
    )
    image2video = Target(
        "kling", "kling", "/kling/v1/videos/image2video", {"image": png_data_url()}, required="image"
    )
    veo = Target(
        "veo",
        "gemini",
        "/v1beta/models/veo-3.0-generate-001:predictLongRunning",
        {"instances": [{"prompt": "a cat"}]},
        text="instances.0.prompt",
        required="instances",
    )
    return [
        (videos, [
            ("prompt_object", "prompt", {}), *numbers("seconds"), ("size_words", "size", "big"),
            ("size_object", "size", {}), ("size_huge", "size", "99999x99999"), ("model_object", "model", {}),
            ("model_unknown", "model", "no-such-video-model"),
            ("input_reference_number", "input_reference", 5),
            ("input_reference_url_object", "input_reference", {"image_url": {}}),
            ("input_reference_bad_base64", "input_reference", {"image_url": BAD_DATA_URL}),
        ]),
        (videos_form, [("seconds_string", "seconds", "ten"), ("seconds_huge", "seconds", str(HUGE))]),
        (unified, [
            ("model_object", "model", {}), ("prompt_object", "prompt", {}), *numbers("duration"),
            ("width_huge", "width", HUGE), ("width_without_height", "width", 640), ("fps_huge", "fps", HUGE),
            ("seed_negative", "seed", NEG), ("metadata_string", "metadata", "x"),
            ("image_object", "image", {}),
            ("image_bad_base64", "image", NOT_B64),
        ]),
        (text2video, [
            ("prompt_object", "prompt", {}), ("model_name_object", "model_name", {}),
            ("duration_object", "duration", {}), ("duration_seven", "duration", "7"),
            ("cfg_scale_string", "cfg_scale", "x"), ("cfg_scale_1e308", "cfg_scale", INF),
            ("mode_number", "mode", 5), ("aspect_ratio_object", "aspect_ratio", {}),
            ("external_task_id_object", "external_task_id", {}),
            ("external_task_id_too_long", "external_task_id", "e" * 201),
            ("external_task_id_nul", "external_task_id", "a\x00b"),
            ("callback_url_number", "callback_url", 5),
            ("callback_url_file", "callback_url", "file:///etc/passwd"),
        ]),
        (image2video, [("image_object", "image", {}), ("image_bad_base64", "image", NOT_B64),
                       ("image_tail_number", "image_tail", 5),
                       ("image_bad_data_url", "image", "data:image/png;base64,@@@")]),
        (veo, [
            ("instances_object", "instances", {}), ("instances_empty", "instances", []),
            ("instance_number", "instances", [5]), ("prompt_object", "instances.0.prompt", {}),
            ("image_string", "instances.0.image", "x"),
            ("image_bad_base64", "instances.0.image", {"bytesBase64Encoded": NOT_B64, "mimeType": PNG}),
            ("image_bytes_number", "instances.0.image", {"bytesBase64Encoded": 5}),
            ("parameters_string", "parameters", "x"), *numbers("parameters.durationSeconds"),
            ("aspect_ratio_object", "parameters.aspectRatio", {}),
            ("resolution_number", "parameters.resolution", 5),
            ("seed_negative", "parameters.seed", NEG),
        ]),
    ]  # fmt: skip


def vidu_targets() -> list[tuple[Target, Cases]]:
    text2audio = Target(
        "vidu", "vidu", "/ent/v2/text2audio", {"model": "audio1.0", "prompt": "rain on a roof"}
    )
    lip_sync = Target(
        "vidu",
        "vidu",
        "/ent/v2/lip-sync",
        {"video_url": "https://example.com/v.mp4", "text": "hello there", "voice_id": "v1"},
        text="text",
        required="video_url",
    )
    return [
        (text2audio, [
            ("model_object", "model", {}), ("prompt_object", "prompt", {}), ("prompt_blank", "prompt", "   "),
            *numbers("duration"), *numbers("seed"), ("payload_object", "payload", {}),
            ("callback_url_number", "callback_url", 5),
        ]),
        (lip_sync, [
            ("video_url_object", "video_url", {}), ("video_url_ftp", "video_url", "ftp://x/v.mp4"),
            ("text_object", "text", {}), ("text_too_short", "text", "hi"),
            ("voice_id_missing", "voice_id", DELETE),
            *numbers("speed"), *numbers("volume"),
            ("audio_url_bad_base64", "audio_url", "data:;base64," + NOT_B64),
        ]),
    ]  # fmt: skip


def picwish_targets() -> list[tuple[Target, Cases]]:
    def tool(kind: str, name: str, body: dict[str, Any]) -> Target:
        return Target(
            "picwish",
            "picwish",
            f"/api/tasks/{kind}/{name}",
            body,
            {"image_file": _png()},
            form=True,
            json_too=True,
            text="type",
            required="image_file",
        )

    seg = tool("visual", "segmentation", {"type": "person"})
    inpaint = tool("visual", "inpaint", {"rectangles": '[{"x": 1, "y": 1, "width": 8, "height": 8}]'})
    scale = tool("visual", "scale", {"scale_factor": "2"})
    ocr = tool("document", "ocr", {"format": "txt"})
    box = {"x": 1, "y": 1, "width": 2, "height": 2}
    return [
        (seg, [
            ("type_unknown", "type", "cat"), ("bg_color_zz", "bg_color", "zz"), ("sync_string", "sync", "x"),
            ("sync_huge", "sync", str(HUGE)), ("return_type_2", "return_type", "2"),
            ("callback_url_file", "callback_url", "file:///etc/passwd"),
            ("image_url_too", "image_url", "https://e.com/a.png"),
        ]),
        (inpaint, [
            ("rectangles_broken", "rectangles", "["), ("rectangles_negative", "rectangles", '[{"x": -1}]'),
            ("rectangles_object", "rectangles", "{}"),
            ("rectangles_too_many", "rectangles", json.dumps([box] * 101)),
        ]),
        (scale, [("scale_factor_3", "scale_factor", "3"), ("scale_factor_huge", "scale_factor", str(HUGE))]),
        (ocr, [("format_gif", "format", "gif"), ("language_junk", "language", "a b;c")]),
    ]  # fmt: skip


def picwish_json_cases() -> Cases:
    """PicWish's JSON form (an image URL instead of a file)."""
    return [("image_url_object", "image_url", {}), ("image_url_ftp", "image_url", "ftp://x/a.png"),
            ("image_url_missing", "image_url", DELETE), ("type_object", "type", {}),
            ("sync_object", "sync", {})]  # fmt: skip
