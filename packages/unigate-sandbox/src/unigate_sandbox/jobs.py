"""The sandbox's asynchronous jobs (music, lyrics, audio upload), behaving like a Suno relay.

Jobs are recorded in the sandbox's journal (journal.py: the data dir's journal files, or the
shared store), so they survive a gateway restart (even a kill -9) just as an upstream's would,
and on a shared store any replica can poll them. A job's state is a function of the time since
it was submitted: submitted -> queued -> streaming -> complete within `music_seconds`. On
completion two WAV clips and their covers are rendered (in a thread) into the file store's
media, which the gateway serves under `/media/`. A prompt containing `[sandbox:fail]` makes
the job fail, so failure paths can be exercised offline.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from unigate.errors import InvalidRequest, StorageUnavailable
from unigate.providers.base import SubmitResult, TaskSubmission, UpstreamTask
from unigate.storage import Storage, media_key
from unigate.tasks.model import CLIP_TO_TASK, combine_clip_statuses
from unigate_sandbox.journal import journal_for
from unigate_sandbox.music import render_clip, render_cover, wav_duration, write_lyrics

log = logging.getLogger("unigate.sandbox")

FAIL_MARKER = "[sandbox:fail]"
CLIP_SECONDS = 6.0


class SandboxJobs:
    def __init__(self, data_dir: Path, music_seconds: float, storage: Storage) -> None:
        self.journal = journal_for(storage, data_dir, "jobs")
        self.storage = storage
        self.music_seconds = music_seconds

    async def submit(self, job: TaskSubmission) -> SubmitResult:
        upstream_id = "sbx_" + uuid.uuid4().hex
        clips = {"MUSIC": 2, "UPLOAD": 1}.get(job.action, 0)
        clip_ids = [f"{upstream_id}-{i}" for i in range(clips)]
        fields = dict(job.fields)
        continue_clip = fields.get("continue_clip_id")
        if continue_clip and await self._audio(str(continue_clip)) is None:
            raise InvalidRequest("The clip to continue has no audio yet.", param="continue_clip_id")
        record = {
            "action": job.action,
            "model": job.model,
            "fields": fields,
            "created": time.time(),
            "clips": clip_ids,
        }
        if job.upload is not None:
            suffix = Path(job.upload_name).suffix.lower() if job.upload_name else ".wav"
            await self.storage.put(media_key(f"{upstream_id}-0{suffix}"), job.upload)
        await self.journal.append(upstream_id, record)
        return SubmitResult(upstream_id, clip_ids)

    async def _audio(self, clip_id: str) -> str | None:
        """The stored name of a clip's audio (a rendered WAV or an uploaded WAV/MP3)."""
        for suffix in (".wav", ".mp3"):
            if await self.storage.exists(media_key(f"{clip_id}{suffix}")):
                return f"{clip_id}{suffix}"
        return None

    async def poll(self, upstream_ids: list[str]) -> dict[str, UpstreamTask]:
        out: dict[str, UpstreamTask] = {}
        for upstream_id in upstream_ids:
            record: dict[str, Any] | None = None
            try:
                record = await self.journal.get(upstream_id)
                if record is None:
                    continue  # unknown to this upstream: the poller retries, then the deadline decides
                out[upstream_id] = await self._state(upstream_id, record)
            except StorageUnavailable as exc:
                # The store, not the job, failed (logged where it was mapped): polled again later.
                log.warning("sandbox job %s not polled: storage unavailable (%s)", upstream_id, exc.detail)
            except (OSError, ValueError) as exc:
                # One job that cannot be rendered fails alone; it must not stall the batch.
                out[upstream_id] = UpstreamTask(
                    upstream_id,
                    "FAILURE",
                    fail_reason=f"The sandbox could not render this job: {exc}",
                    error_type="sandbox_failure",
                    clips=[{"id": c, "status": "error"} for c in (record or {}).get("clips", [])],
                )
        return out

    async def _state(self, upstream_id: str, record: dict[str, Any]) -> UpstreamTask:
        elapsed = time.time() - float(record["created"])
        fields = record["fields"]
        action = record["action"]
        if FAIL_MARKER in str(fields.get("prompt", "")) + str(fields.get("gpt_description_prompt", "")):
            if elapsed > self.music_seconds * 0.3:
                return UpstreamTask(
                    upstream_id,
                    "FAILURE",
                    fail_reason="The sandbox was asked to fail this task.",
                    error_type="sandbox_failure",
                    clips=[{"id": c, "status": "error"} for c in record["clips"]],
                )
            return UpstreamTask(
                upstream_id, "QUEUED", clips=[{"id": c, "status": "queued"} for c in record["clips"]]
            )
        if action == "LYRICS":
            return self._lyrics(upstream_id, fields, elapsed)
        if action == "UPLOAD":
            return await self._upload(upstream_id, record)
        return await self._music(upstream_id, record, elapsed)

    def _lyrics(self, upstream_id: str, fields: dict[str, Any], elapsed: float) -> UpstreamTask:
        if elapsed < min(1.5, self.music_seconds / 4):
            return UpstreamTask(
                upstream_id, "IN_PROGRESS", lyrics={"text": "", "title": "", "status": "running"}
            )
        title, text = write_lyrics(str(fields.get("prompt", "")))
        return UpstreamTask(
            upstream_id, "SUCCESS", lyrics={"text": text, "title": title, "status": "complete"}
        )

    async def _upload(self, upstream_id: str, record: dict[str, Any]) -> UpstreamTask:
        clip_id = record["clips"][0]
        name = await self._audio(clip_id)
        data = await self.storage.read(media_key(name)) if name else None
        if name is None or data is None:
            return UpstreamTask(
                upstream_id,
                "FAILURE",
                fail_reason="The uploaded audio is missing.",
                error_type="sandbox_failure",
            )
        try:
            duration = await asyncio.to_thread(wav_duration, data)
        except ValueError:
            duration = 0.0  # not a WAV file: its length is unknown to the sandbox
        clip = {
            "id": clip_id,
            "status": "complete",
            "audio_url": f"/media/{name}",
            "duration": duration,
            "title": str(record["fields"].get("title", "")),
        }
        return UpstreamTask(upstream_id, "SUCCESS", clips=[clip])

    async def _music(self, upstream_id: str, record: dict[str, Any], elapsed: float) -> UpstreamTask:
        total = self.music_seconds
        if elapsed < total * 0.15:
            status, progress = "submitted", 0
        elif elapsed < total * 0.3:
            status, progress = "queued", 5
        elif elapsed < total:
            status, progress = "streaming", int(100 * elapsed / total)
        else:
            status, progress = "complete", 100
        clips: list[dict[str, Any]] = [{"id": c, "status": status} for c in record["clips"]]
        if status == "complete":
            clips = await self._render(record)
        task_status = combine_clip_statuses([c["status"] for c in clips])
        assert task_status in CLIP_TO_TASK.values()
        return UpstreamTask(upstream_id, task_status, progress=progress, clips=clips)

    async def _render(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Render (once: files already stored are kept) and describe the finished clips.
        Rendering runs in worker threads; the store is read and written from the loop."""
        fields = record["fields"]
        prompt = str(fields.get("prompt") or fields.get("gpt_description_prompt") or "")
        tags, title = str(fields.get("tags") or ""), str(fields.get("title") or "")
        source: bytes | None = None
        if fields.get("continue_clip_id"):
            # An MP3 upload is not spliced: only a WAV is read.
            source = await self.storage.read(media_key(f"{fields['continue_clip_id']}.wav"))
            if source is not None:
                try:
                    wav_duration(source)
                except ValueError:
                    source = None  # a WAV the synthesiser cannot read (float, extensible): no splice
        clips = []
        for variant, clip_id in enumerate(record["clips"]):
            audio = await self.storage.read(media_key(f"{clip_id}.wav"))
            if audio is None:
                audio = await asyncio.to_thread(
                    render_clip,
                    prompt,
                    tags,
                    title,
                    variant,
                    seconds=CLIP_SECONDS,
                    continue_from=source,
                    continue_at=float(fields.get("continue_at") or 0),
                )
                await self.storage.put(media_key(f"{clip_id}.wav"), audio)
            for suffix, size in (("", 512), ("-large", 1024)):
                cover = media_key(f"{clip_id}{suffix}.png")
                if not await self.storage.exists(cover):
                    await self.storage.put(
                        cover, await asyncio.to_thread(render_cover, title or prompt[:60], tags, size)
                    )
            clips.append(
                {
                    "id": clip_id,
                    "status": "complete",
                    "audio_url": f"/media/{clip_id}.wav",
                    "image_url": f"/media/{clip_id}.png",
                    "image_large_url": f"/media/{clip_id}-large.png",
                    "video_url": "",
                    "duration": round(wav_duration(audio), 2),
                    "title": title,
                }
            )
        return clips
