"""The sandbox's sound jobs: sound effects (`text2audio`: an MP3 of the requested length
drawn from the prompt and seed) and lip sync (`lip-sync`: the input video with a mouth that
follows the speech, whose sound track is the given audio, or speech synthesised from the
text, and a WebP cover), as `/media/` files.

Inputs arrive as URLs, fetched at submit through the gateway's SSRF guard and sniffed, so
a file that is plainly not video or audio is a 400 then; one that only fails to decode fails
the task with the decoder's reason.
"""

from __future__ import annotations

from typing import Any

from unigate.edge.media_types import sniff_audio, sniff_image
from unigate.errors import InvalidRequest
from unigate.providers.base import TaskSubmission
from unigate_sandbox.tasks import InputStore, Rendered

MAX_SOUND_SECONDS = 30.0
MAX_SPEECH_SECONDS = 60.0  # what the sandbox's lip sync takes
MAX_VIDEO = 100 * 1024 * 1024
MAX_AUDIO = 100 * 1024 * 1024
MAX_PHOTO = 20 * 1024 * 1024


def sniff_video(head: bytes) -> str | None:
    """The container of a video upload from its first bytes (MP4/MOV, WebM/Matroska, AVI, FLV)."""
    if head[4:8] in (b"ftyp", b"moov", b"mdat", b"wide", b"free"):
        return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "avi"
    if head[:3] == b"FLV":
        return "flv"
    return None


class SoundEffectKind:
    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        seconds = float(job.fields.get("duration") or 10.0)
        if not 0 < seconds <= MAX_SOUND_SECONDS:
            raise InvalidRequest(
                f"The sandbox makes sound effects of at most {MAX_SOUND_SECONDS:g} seconds.",
                param="duration",
                code="invalid_value",
            )
        return {"seconds": seconds, "seed": int(job.fields.get("seed") or 0)}

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        from unigate_sandbox.media.sound import render_sound_effect

        p = record["prepared"]
        audio = render_sound_effect(str(record["fields"].get("prompt") or ""), p["seconds"], seed=p["seed"])
        out = Rendered([])
        out.outputs.append(
            {
                "id": job_id,
                "url": out.add(f"{job_id}.mp3", audio),
                "cover_url": "",
                "duration": p["seconds"],
                "content_type": "audio/mpeg",
            }
        )
        return out


class LipSyncKind:
    async def prepare(self, job: TaskSubmission, inputs: InputStore) -> dict[str, Any]:
        fields = job.fields
        video = await inputs.fetch(str(fields["video_url"]), MAX_VIDEO, "video_url")
        if sniff_video(video[:16]) is None:
            raise InvalidRequest(
                "The file at 'video_url' is not an MP4, MOV, WebM or AVI video.",
                param="video_url",
                code="invalid_video",
            )
        prepared: dict[str, Any] = {"files": {"video": await inputs.save("video", video)}}
        if fields.get("ref_photo_url"):
            photo = await inputs.fetch(str(fields["ref_photo_url"]), MAX_PHOTO, "ref_photo_url")
            if sniff_image(photo[:16]) not in ("png", "jpeg", "webp"):
                raise InvalidRequest(
                    "The file at 'ref_photo_url' is not a PNG, JPEG or WebP image.",
                    param="ref_photo_url",
                    code="invalid_image",
                )
        if fields.get("audio_url"):  # the audio wins over text, as at Vidu
            audio = await inputs.fetch(str(fields["audio_url"]), MAX_AUDIO, "audio_url")
            if sniff_audio(audio[:16]) is None:
                raise InvalidRequest(
                    "The file at 'audio_url' is not WAV, MP3, AAC, M4A, OGG or FLAC audio.",
                    param="audio_url",
                    code="invalid_audio",
                )
            prepared["files"]["audio"] = await inputs.save("audio", audio)
            return prepared
        from unigate_sandbox.media.speech import speech_duration

        speed = float(fields.get("speed") or 1.0)
        if speech_duration(str(fields.get("text") or ""), speed) > MAX_SPEECH_SECONDS:
            raise InvalidRequest(
                f"The sandbox lip-syncs at most {MAX_SPEECH_SECONDS:g} seconds of speech; shorten 'text'.",
                param="text",
                code="invalid_value",
            )
        prepared.update({"voice": str(fields.get("voice_id") or "alloy"), "speed": speed})
        return prepared

    def render(self, job_id: str, record: dict[str, Any], files: dict[str, bytes]) -> Rendered:
        from unigate_sandbox.media.lipsync import lip_sync
        from unigate_sandbox.media.video import video_thumbnail

        p, text = record["prepared"], str(record["fields"].get("text") or "")
        audio = files["audio"] if "audio" in files else _speech(text, p["voice"], p["speed"])
        video = lip_sync(files["video"], audio)
        cover = video_thumbnail(video, "webp")
        out = Rendered([])
        out.outputs.append(
            {
                "id": job_id,
                "url": out.add(f"{job_id}.mp4", video),
                "cover_url": out.add(f"{job_id}-cover.webp", cover),
                "content_type": "video/mp4",
            }
        )
        return out


def _speech(text: str, voice: str, speed: float) -> bytes:
    """The text spoken (sandbox speech), as a WAV file of exact length."""
    from unigate_sandbox.media.encode import encode_stream
    from unigate_sandbox.media.speech import SPEECH_RATE, synthesize

    pcm = b"".join(synthesize(text, voice, speed))
    return b"".join(encode_stream([pcm], "wav", SPEECH_RATE, total_samples=len(pcm) // 2))
