"""Odd text where the gateway stores what it is given (task submits of every family, key
names): each submit must be refused with a 400 in the family's shape, or stored and fetched
back exactly, on SQLite and on PostgreSQL (whose `text` cannot hold a NUL).

Decided behaviour: a lone surrogate is not Unicode text, so it is refused (400) wherever it
arrives (JSON `\\ud800` escapes, CESU bytes in a form); a NUL inside JSON-stored fields
(prompts, titles, tags) is stored as the JSON escape `\\u0000`, which PostgreSQL holds, and
comes back exactly; fields with their own column (key names, Kling's external_task_id) and
music fields refuse it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.corpus_model import BOUNDARY, FORM_CT, JSON_CT, encode_form
from tests.support.gateway import ADMIN_KEY, GatewayProcess
from tests.support.media_fixtures import encode_tone
from tests.support.raw_http import RawResponse, build_request, send_raw

ODD_TEXT = {
    "nul": "a\x00b",
    "lone_surrogate": "a\ud800b",
    "surrogate_pair": "a\U0001f600b",
    "controls": "a\x01\x1f\x7f\u2028b",
    "noncharacter": "a\uffffb",
}


# Kling and Veo render 720p at least (seconds of CPU per task): their stored values are
# checked without it, the sandbox failing those tasks on request instead of rendering them.
SKIP_RENDER = "[sandbox:fail] "


@dataclass(frozen=True)
class Store:
    """One storing endpoint: how to submit `value`, and where its answer shows it again."""

    name: str
    style: str
    path: str
    body: Callable[[str], tuple[bytes, str]]  # value -> (body, content type)
    fetch: Callable[[Any], str | None]  # submit answer -> path that shows the stored task
    shown: Callable[[Any], list[Any]]  # fetched record -> the values that must equal `value`
    admin: bool = False
    # fetched record -> "" while running, else "ok" or "failed" (no state: nothing to wait for)
    state: Callable[[Any], str] | None = None


def _json(body: dict[str, Any]) -> tuple[bytes, str]:
    return json.dumps(body).encode(), JSON_CT  # \uXXXX escapes, lone surrogates included


def _form(fields: dict[str, str], files: dict[str, tuple[str, str, bytes]]) -> tuple[bytes, str]:
    parts: list[Any] = [(k, v.encode("utf-8", "surrogatepass")) for k, v in fields.items()]
    return encode_form([*parts, *files.items()], BOUNDARY), FORM_CT


def _state(status: str, ok: str, failed: str) -> str:
    return {ok: "ok", failed: "failed"}.get(status, "")


def _music_clip(record: Any) -> Any:
    return record["data"]["data"][0] if record["data"].get("data") else {}


STORES: list[Store] = [
    Store(
        "music_submit", "music", "/suno/submit/music",
        lambda v: _json({"prompt": v, "tags": v, "title": v, "mv": "chirp-v3-5"}),
        lambda a: f"/suno/fetch/{a['data']['task_id']}",
        lambda r: [_music_clip(r).get("title"), _music_clip(r).get("metadata", {}).get("tags")],
        state=lambda r: _state(r["data"]["status"], "SUCCESS", "FAILURE"),
    ),
    Store(
        "music_upload_title", "music", "/suno/upload/audio",
        lambda v: _form({"title": v}, {"file": ("a.wav", "audio/wav", encode_tone(0.3, "wav"))}),
        lambda a: f"/suno/fetch/{a['data']['task_id']}",
        lambda r: [_music_clip(r).get("title")],
        state=lambda r: _state(r["data"]["status"], "SUCCESS", "FAILURE"),
    ),
    Store(
        "openai_video_json", "openai", "/v1/videos",
        lambda v: _json({"prompt": v, "model": "sandbox-video", "seconds": 1, "size": "128x128"}),
        lambda a: f"/v1/videos/{a['id']}",
        lambda r: [r["prompt"]],
        state=lambda r: _state(r["status"], "completed", "failed"),
    ),
    Store(
        "openai_video_form", "openai", "/v1/videos",
        lambda v: _form({"prompt": v, "model": "sandbox-video", "seconds": "1", "size": "128x128"}, {}),
        lambda a: f"/v1/videos/{a['id']}",
        lambda r: [r["prompt"]],
        state=lambda r: _state(r["status"], "completed", "failed"),
    ),
    Store(
        "unified_video", "openai", "/v1/video/generations",
        lambda v: _json({"model": "sandbox-video", "prompt": v, "duration": 1, "width": 128, "height": 128}),
        lambda a: f"/v1/video/generations/{a['id']}",
        lambda r: [r["prompt"]],
        state=lambda r: _state(r["status"], "completed", "failed"),
    ),
    Store(
        "kling_external_id", "kling", "/kling/v1/videos/text2video",
        lambda v: _json({"prompt": SKIP_RENDER + v, "external_task_id": v, "duration": "5"}),
        lambda a: f"/kling/v1/videos/text2video/{a['data']['task_id']}",
        lambda r: [r["data"]["task_info"].get("external_task_id")],
    ),
    Store(
        "vidu_prompt", "vidu", "/ent/v2/text2audio",
        lambda v: _json({"model": "audio1.0", "prompt": "rain " + v, "duration": 2}),
        lambda a: f"/ent/v2/tasks/{a['task_id']}/creations",
        lambda r: [],  # the creations record does not show the prompt: stored, not shown
    ),
    Store(
        "veo_prompt", "gemini", "/v1beta/models/veo-3.0-generate-001:predictLongRunning",
        lambda v: _json({"instances": [{"prompt": SKIP_RENDER + v}], "parameters": {"durationSeconds": 1}}),
        lambda a: "/v1beta/models/veo-3.0-generate-001/operations/" + a["name"].rsplit("/", 1)[-1],
        lambda r: [],
    ),
    Store(
        "admin_key_name", "openai", "/admin/keys",
        lambda v: _json({"name": v}),
        lambda a: f"/admin/keys/{a['id']}",
        lambda r: [r["name"]],
        admin=True,
    ),
]  # fmt: skip

# Where the submit's answer shows the value at once (before any fetch).
ECHOED: dict[str, Callable[[Any], list[Any]]] = {
    "openai_video_json": lambda a: [a["prompt"]],
    "openai_video_form": lambda a: [a["prompt"]],
    "unified_video": lambda a: [a["prompt"]],
    "vidu_prompt": lambda a: [a["prompt"].removeprefix("rain ")],
    "admin_key_name": lambda a: [a["name"]],
}


def call(
    gw: GatewayProcess, key: str, method: str, path: str, body: bytes = b"", ctype: str = ""
) -> RawResponse:
    headers = [("Authorization", f"Bearer {key}")] + ([("Content-Type", ctype)] if ctype else [])
    return send_raw(gw.port, build_request(method, path, body, headers))


def roundtrip(gw: GatewayProcess, key: str, store: Store, value: str, wait: float) -> tuple[int, str | None]:
    """(submit status, problem or None): a 400, or the value shown exactly by the submit's
    answer and by fetches until the task has finished well (or `wait` seconds pass)."""
    secret = ADMIN_KEY if store.admin else key
    body, ctype = store.body(value)
    res = call(gw, secret, "POST", store.path, body, ctype)
    if res.status == 400:
        return res.status, None
    if not 200 <= res.status < 300:
        return res.status, f"submit answered {res.status}: {res.body[:300]!r}"
    answer = res.json()
    shown = ECHOED.get(store.name, lambda a: [])(answer)
    deadline = time.monotonic() + wait
    while True:
        fetched = call(gw, secret, "GET", store.fetch(answer) or "")
        if fetched.status != 200:
            return res.status, f"fetch answered {fetched.status}: {fetched.body[:300]!r}"
        record = fetched.json()
        wrong = [s for s in shown + store.shown(record) if s != value]
        if wrong:
            return res.status, f"stored {value!r} but read back {wrong!r}"
        state = store.state(record) if store.state is not None else "ok"
        if state == "failed":
            return res.status, f"the task with {value!r} failed: {record!r:.400}"
        if state == "ok" or time.monotonic() > deadline:
            return res.status, None
        time.sleep(0.25)
