"""The sandbox's asynchronous jobs (music, lyrics, audio upload), behaving like a Suno relay.

Jobs are appended to a journal under `<data dir>/sandbox/jobs`, so they survive a gateway
restart (even a kill -9) just as an upstream's would. A job's state is a function of the time since it was
submitted: submitted -> queued -> streaming -> complete within `music_seconds`. On
completion two WAV clips and their covers are rendered (in a thread) into `<data dir>/media`,
which the gateway serves under `/media/`. A prompt containing `[sandbox:fail]` makes the job
fail, so failure paths can be exercised offline.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from unigate.errors import InvalidRequest
from unigate.providers.base import SubmitResult, TaskSubmission, UpstreamTask
from unigate.providers.sandbox.journal import JobJournal
from unigate.providers.sandbox.music import render_clip, render_cover, wav_duration, write_lyrics
from unigate.tasks.model import CLIP_TO_TASK, combine_clip_statuses

FAIL_MARKER = "[sandbox:fail]"
CLIP_SECONDS = 6.0


class SandboxJobs:
    def __init__(self, data_dir: Path, music_seconds: float) -> None:
        self.journal = JobJournal(data_dir / "sandbox" / "jobs")
        self.media = data_dir / "media"
        self.music_seconds = music_seconds

    async def submit(self, job: TaskSubmission) -> SubmitResult:
        upstream_id = "sbx_" + uuid.uuid4().hex
        clips = {"MUSIC": 2, "UPLOAD": 1}.get(job.action, 0)
        clip_ids = [f"{upstream_id}-{i}" for i in range(clips)]
        fields = dict(job.fields)
        continue_clip = fields.get("continue_clip_id")
        if continue_clip and self._audio(str(continue_clip)) is None:
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
            await asyncio.to_thread(self._store_upload, upstream_id, job.upload, suffix)
        self.journal.append(upstream_id, record)
        return SubmitResult(upstream_id, clip_ids)

    def _audio(self, clip_id: str) -> Path | None:
        for suffix in (".wav", ".mp3"):
            path = self.media / f"{clip_id}{suffix}"
            if path.exists():
                return path
        return None

    def _store_upload(self, upstream_id: str, upload: bytes, suffix: str) -> None:
        self.media.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.media / f"{upstream_id}-0{suffix}", upload)

    async def poll(self, upstream_ids: list[str]) -> dict[str, UpstreamTask]:
        out: dict[str, UpstreamTask] = {}
        for upstream_id in upstream_ids:
            record = self.journal.get(upstream_id)
            if record is None:
                continue  # unknown to this upstream: the poller retries, then the deadline decides
            try:
                out[upstream_id] = await self._state(upstream_id, record)
            except (OSError, ValueError) as exc:
                # One job that cannot be rendered fails alone; it must not stall the batch.
                out[upstream_id] = UpstreamTask(
                    upstream_id,
                    "FAILURE",
                    fail_reason=f"The sandbox could not render this job: {exc}",
                    error_type="sandbox_failure",
                    clips=[{"id": c, "status": "error"} for c in record.get("clips", [])],
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
        audio = self._audio(clip_id)
        if audio is None:
            return UpstreamTask(
                upstream_id,
                "FAILURE",
                fail_reason="The uploaded audio is missing.",
                error_type="sandbox_failure",
            )
        try:
            duration = await asyncio.to_thread(lambda: wav_duration(audio.read_bytes()))
        except ValueError:
            duration = 0.0  # not a WAV file: its length is unknown to the sandbox
        clip = {
            "id": clip_id,
            "status": "complete",
            "audio_url": f"/media/{audio.name}",
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
            clips = await asyncio.to_thread(self._render, record)
        task_status = combine_clip_statuses([c["status"] for c in clips])
        assert task_status in CLIP_TO_TASK.values()
        return UpstreamTask(upstream_id, task_status, progress=progress, clips=clips)

    def _render(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Render (once) and describe the finished clips."""
        fields = record["fields"]
        prompt = str(fields.get("prompt") or fields.get("gpt_description_prompt") or "")
        tags, title = str(fields.get("tags") or ""), str(fields.get("title") or "")
        self.media.mkdir(parents=True, exist_ok=True)
        source: bytes | None = None
        if fields.get("continue_clip_id"):
            found = self.media / f"{fields['continue_clip_id']}.wav"
            source = found.read_bytes() if found.exists() else None  # an MP3 upload is not spliced
            if source is not None:
                try:
                    wav_duration(source)
                except ValueError:
                    source = None  # a WAV the synthesiser cannot read (float, extensible): no splice
        clips = []
        for variant, clip_id in enumerate(record["clips"]):
            audio = self.media / f"{clip_id}.wav"
            if not audio.exists():
                data = render_clip(
                    prompt,
                    tags,
                    title,
                    variant,
                    seconds=CLIP_SECONDS,
                    continue_from=source,
                    continue_at=float(fields.get("continue_at") or 0),
                )
                _atomic_write(audio, data)
            for suffix, size in (("", 512), ("-large", 1024)):
                cover = self.media / f"{clip_id}{suffix}.png"
                if not cover.exists():
                    _atomic_write(cover, render_cover(title or prompt[:60], tags, size))
            clips.append(
                {
                    "id": clip_id,
                    "status": "complete",
                    "audio_url": f"/media/{clip_id}.wav",
                    "image_url": f"/media/{clip_id}.png",
                    "image_large_url": f"/media/{clip_id}-large.png",
                    "video_url": "",
                    "duration": round(wav_duration(audio.read_bytes()), 2),
                    "title": title,
                }
            )
        return clips


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
