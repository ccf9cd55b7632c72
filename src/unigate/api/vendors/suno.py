"""Music family (`/suno/*`): submit music and lyrics, upload audio, fetch one or many tasks.
Answers and errors use the music envelope `{"code", "message", "data"}`."""

from __future__ import annotations

from pathlib import PurePosixPath

from unigate.api.serving.public_url import configured_base, public_base
from unigate.api.serving.task_family import idempotency_key
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request, send_body
from unigate.edge.endpoints import Endpoint
from unigate.edge.multipart import is_multipart, read_form
from unigate.errors import InvalidRequest, NotFound, PermissionDenied
from unigate.gateway import Gateway
from unigate.music import validate
from unigate.providers.base import TaskSubmission
from unigate.routing.catalog import ModelEntry
from unigate.shapes.music import FETCH, LYRICS, SUBMIT, UPLOAD_FORM, UPLOAD_URL
from unigate.tasks.model import Task
from unigate.tasks.service import Pinned
from unigate.webhooks.fetch import fetch_url

_ENVELOPE_HEAD = b'{"code":"success","message":"","data":'  # + data + "}": no re-serialisation
LYRICS_MODEL = "suno-lyrics"


def sniff_audio(data: bytes) -> str | None:
    """`.wav` / `.mp3` by content, or None for anything else."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return ".wav"
    if data[:3] == b"ID3" or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return ".mp3"
    return None


class MusicAPI:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.public_url = configured_base(gw)
        self.tasks = gw.tasks
        self.allow_private = gw.allow_private_webhooks

    async def _send_task(self, request: Request, task: Task) -> None:
        await self._send(request, _ENVELOPE_HEAD + self.tasks.rendered(task) + b"}")

    async def _send(self, request: Request, body: bytes) -> None:
        await send_body(request.send, 200, body, extra=[(b"x-request-id", request.request_id.encode())])

    def _model(self, principal: Principal, mv: str) -> tuple[str, ModelEntry]:
        model = mv or self.gw.config.music.default_model
        entry = self.gw.catalog.resolve(model)
        if entry is None:
            raise InvalidRequest(f"Unknown model version '{model}'.", param="mv", code="invalid_mv")
        if not principal.may_use_model(model):
            raise PermissionDenied(f"This API key may not use the model '{model}'.", code="model_not_allowed")
        return model, entry

    async def submit_music(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        checked = SUBMIT.check(payload)
        fields = validate.music_fields(checked)
        hook = validate.notify_hook(checked.notify_hook, self.allow_private)
        model, entry = self._model(principal, fields.pop("mv"))
        route: ModelEntry | Pinned = entry
        upstream_fields = fields
        if fields["continue_clip_id"]:
            route, upstream_clip = await self._continuation(principal, fields["continue_clip_id"], model)
            upstream_fields = {**fields, "continue_clip_id": upstream_clip}
        job = TaskSubmission("music", "MUSIC", model, upstream_fields)
        task = await self.tasks.submit(
            principal,
            job,
            route,
            price=entry.price_per_call,
            notify_hook=hook,
            public_base=public_base(request, self.public_url),
            idempotency_key=idempotency_key(request),
            clip_count=2,
            stored_fields=fields,
        )
        await self._send_task(request, task)

    async def _continuation(self, principal: Principal, clip_id: str, model: str) -> tuple[Pinned, str]:
        """The provider that owns the clip, and the clip's id at that provider."""
        found = await self.tasks.store.clip(clip_id)
        if found is None or found[1] != principal.key_id:
            raise NotFound("No clip with this id.", param="continue_clip_id", code="clip_not_exist")
        _, _, provider_name, upstream_clip = found
        provider = self.gw.providers.get(provider_name)
        if provider is None:
            raise InvalidRequest(
                "The provider of this clip is no longer configured.", code="clip_unavailable"
            )
        if not upstream_clip:
            raise InvalidRequest(
                "The clip is not ready to be continued yet.", param="continue_clip_id", code="clip_not_ready"
            )
        target = self.gw.catalog.target_on(provider, model)
        return Pinned(target), upstream_clip

    async def submit_lyrics(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        checked_lyrics = LYRICS.check(payload)
        fields = validate.lyrics_fields(checked_lyrics)
        hook = validate.notify_hook(checked_lyrics.notify_hook, self.allow_private)
        mv = fields.pop("mv")
        lyrics_entry = self.gw.catalog.resolve(LYRICS_MODEL)
        model, entry = (LYRICS_MODEL, lyrics_entry) if lyrics_entry and not mv else self._model(principal, mv)
        job = TaskSubmission("music", "LYRICS", model, fields)
        task = await self.tasks.submit(
            principal,
            job,
            entry,
            price=entry.price_per_call,
            notify_hook=hook,
            public_base=public_base(request, self.public_url),
            idempotency_key=idempotency_key(request),
            clip_count=0,
        )
        await self._send_task(request, task)

    async def upload_audio(self, request: Request, principal: Principal) -> None:
        limit = self.gw.config.limits.max_audio_upload
        content_type = request.header(b"content-type")
        if is_multipart(content_type):
            form = await read_form(request, limit)
            try:
                sent = UPLOAD_FORM.check_form(form)
                data, name = sent.file.file.read(), sent.file.file.filename
            finally:
                form.close()
            hook = validate.notify_hook(sent.notify_hook, self.allow_private)
            mv, title = sent.mv or "", sent.title or ""
        else:
            _, payload = await request.json_object(self.gw.config.limits.max_json_body)
            by_url = UPLOAD_URL.check(payload)
            hook = validate.notify_hook(by_url.notify_hook, self.allow_private)
            mv, title = by_url.mv or "", by_url.title or ""
            data, _ = await fetch_url(self.gw.webhook_sender, by_url.url, limit)
            name = PurePosixPath(by_url.url.split("?", 1)[0]).name
        suffix = sniff_audio(data)
        if suffix is None:
            raise InvalidRequest(
                "The upload is not WAV or MP3 audio.", param="file", code="unsupported_media"
            )
        model, entry = self._model(principal, mv)
        fields = {"title": (title or PurePosixPath(name).stem)[:200], "source_name": name[:200]}
        job = TaskSubmission("music", "UPLOAD", model, fields, upload=data, upload_name="upload" + suffix)
        task = await self.tasks.submit(
            principal,
            job,
            entry,
            price=0.0,
            notify_hook=hook,
            public_base=public_base(request, self.public_url),
            idempotency_key=idempotency_key(request),
            clip_count=1,
        )
        await self._send_task(request, task)

    async def fetch_one(self, request: Request, principal: Principal) -> None:
        record = await self.tasks.fetch_rendered(principal, request.params["task_id"])
        if record is None:
            raise NotFound("No task with this id.", code="task_not_exist")
        await self._send(request, _ENVELOPE_HEAD + record + b"}")

    async def fetch_many(self, request: Request, principal: Principal) -> None:
        _, payload = await request.json_object(self.gw.config.limits.max_json_body)
        wanted_tasks = FETCH.check(payload)
        ids, action = wanted_tasks.ids, wanted_tasks.action
        found: list[Task] = await self.tasks.fetch_many(principal, ids)
        if action:
            wanted = {action.upper()} | ({"UPLOAD"} if action.upper() == "MUSIC" else set())
            found = [t for t in found if t.action in wanted]
        await self._send(
            request, _ENVELOPE_HEAD + b"[" + b",".join(self.tasks.rendered(t) for t in found) + b"]}"
        )


def endpoints(gw: Gateway) -> list[Endpoint]:
    api = MusicAPI(gw)
    return [
        Endpoint("POST", "/suno/submit/music", api.submit_music, family="music", style="music"),
        Endpoint("POST", "/suno/submit/lyrics", api.submit_lyrics, family="music", style="music"),
        Endpoint("POST", "/suno/upload/audio", api.upload_audio, family="music", style="music"),
        Endpoint("GET", "/suno/fetch/{task_id}", api.fetch_one, family="music", style="music"),
        Endpoint("POST", "/suno/fetch", api.fetch_many, family="music", style="music"),
    ]
