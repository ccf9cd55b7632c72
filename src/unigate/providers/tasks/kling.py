"""`kling` protocol: Kling's official video API (https://api-singapore.klingai.com).

Auth: `Authorization: Bearer <JWT>`, an HS256 token minted for every request from the
configured `api_key` "<access_key>:<secret_key>" ("|" works too): claims `iss` = access key,
`exp` = now + 1800 s, `nbf` = now - 5 s, signed with the secret key. A key without a
separator is sent as a ready-made bearer token (Kling-compatible relays take their own keys).

Submit: `POST /v1/videos/{text2video|image2video}` with `model_name`, `prompt`,
`negative_prompt`, `cfg_scale`, `mode`, `aspect_ratio` (16:9 | 9:16 | 1:1), `duration`
("5" | "10"), `image` / `image_tail` (an http(s) URL, or raw base64 without a data: prefix),
`external_task_id`, plus the job's `metadata`; a job that came in Kling's own format is sent as
the client wrote it, model mapped. Answer `{"code": 0, "message", "request_id", "data":
{"task_id", "task_status", ...}}`; any other `code` is an error (`_code_status`).
Query: `GET /v1/videos/{action}/{task_id}`: `data.task_status` submitted | processing |
succeed | failed, `task_status_msg`, `task_result.videos[{id, url, duration}]` (duration in
seconds, as a string), times in milliseconds. Remix is not a Kling operation.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

import orjson

from unigate.config import ProviderConfig
from unigate.providers.base import (
    Provider,
    ProviderContext,
    RouteFailed,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.headers import upstream_headers
from unigate.providers.http import UpstreamHTTP
from unigate.providers.task_http import (
    Answer,
    answer_error,
    aspect_ratio,
    exchange,
    file_base64,
    number,
    obj,
    objects,
    path_id,
    poll_each,
    query_timeouts,
    raw_base64,
    text,
)
from unigate.providers.upstream_status import row
from unigate.tasks.model import UNKNOWN

PROVIDER_TYPE = "kling"
DEFAULT_BASE_URL = "https://api-singapore.klingai.com"
VENDOR = "Kling"
ACTIONS = ("text2video", "image2video")
TOKEN_SECONDS = 1800
_DURATIONS = (5, 10)
_STATUSES = {"submitted": "QUEUED", "processing": "IN_PROGRESS", "succeed": "SUCCESS", "failed": "FAILURE"}


@dataclass(frozen=True, slots=True)
class KlingKeys:
    access_key: str
    secret_key: str

    @classmethod
    def parse(cls, api_key: str) -> KlingKeys | None:
        """Split "ak:sk" or "ak|sk"; None when the key has no separator (a plain bearer token)."""
        for sep in ("|", ":"):
            access, found, secret = api_key.partition(sep)
            if found and access.strip() and secret.strip():
                return cls(access.strip(), secret.strip())
        return None


def mint_jwt(keys: KlingKeys, now: float) -> str:
    """The HS256 token Kling wants, built from the standard library alone."""
    header = _b64url(orjson.dumps({"alg": "HS256", "typ": "JWT"}))
    claims = {"iss": keys.access_key, "exp": int(now) + TOKEN_SECONDS, "nbf": int(now) - 5}
    signing_input = header + b"." + _b64url(orjson.dumps(claims))
    signature = hmac.new(keys.secret_key.encode(), signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + _b64url(signature)).decode("ascii")


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


class KlingProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset(ACTIONS)

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        self.keys = KlingKeys.parse(config.api_key)
        # With an access/secret key pair the Authorization is a JWT made per request.
        bearer = self.keys is None and config.api_key
        credentials = {"Authorization": f"Bearer {config.api_key}"} if bearer else {}
        headers = upstream_headers({"Content-Type": "application/json"}, config.headers, credentials)
        self.http = UpstreamHTTP(config.base_url or DEFAULT_BASE_URL, headers, config)
        self.secrets = [s for s in (config.api_key, *(self._key_parts())) if s]

    def _key_parts(self) -> tuple[str, ...]:
        return (self.keys.access_key, self.keys.secret_key) if self.keys else ()

    async def start(self) -> None:
        await self.http.start()

    async def aclose(self) -> None:
        await self.http.aclose()

    def _auth(self) -> dict[str, str] | None:
        if self.keys is None:
            return None  # the pool's own headers (plain token or configured header) apply
        return {"Authorization": f"Bearer {mint_jwt(self.keys, time.time())}"}

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.action not in ACTIONS:
            await super().submit_task(job, target)
        body = request_body(job, target.upstream_model)
        answer = await exchange(
            self.http, "POST", f"/v1/videos/{job.action}", target.timeouts, orjson.dumps(body), self._auth()
        )
        data = self._data(answer)
        task_id = text(data, "task_id")
        if not task_id:
            raise RouteFailed("The Kling upstream's answer has no task id.")
        return SubmitResult(task_id)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        limits = query_timeouts(timeouts)

        async def query(ref: TaskRef) -> UpstreamTask | None:
            if ref.action not in ACTIONS:
                return None
            path = f"/v1/videos/{ref.action}/{path_id(ref.upstream_id)}"
            answer = await exchange(self.http, "GET", path, limits, headers=self._auth())
            return task_state(ref.upstream_id, self._data(answer))

        return await poll_each(refs, query, VENDOR)

    def _data(self, answer: Answer) -> dict[str, Any]:
        """`data` of a successful answer; an error answer raises, mapped by Kling's code."""
        code = answer.body.get("code")
        if answer.status < 400 and answer.is_json and code == 0:
            return obj(answer.body, "data")
        message = text(answer.body, "message")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            status = _code_status(code, answer.status)
            raise answer_error(
                VENDOR, answer, message, self.secrets, f"kling_{code}", status=status, detail=f"code {code}",
                clients_404=1200 <= code < 1300,  # a parameter Kling names (a model) does not exist
            )  # fmt: skip
        raise answer_error(VENDOR, answer, message, self.secrets)


def _code_status(code: int, status: int) -> int:
    """The HTTP status a Kling service code means: 1000s auth and 1100s account (another
    route's account may work), 1200s parameters and 1300/1301 content policy (the client's
    request, with the HTTP status Kling sent when that is a plain refusal: 400, or 404 for an
    unknown model), 1302/1303 rate and concurrency limits, 5000s server errors."""
    if 1000 <= code < 1100:
        return 401
    if code in (1100, 1101, 1102, 1302, 1303):
        return 429
    if 1100 <= code < 1200 or code >= 5000 or code == 1304:
        return 500
    if 1200 <= code < 1302:
        return status if status == 404 or (400 <= status < 500 and not row(status).route_failed) else 400
    return status


def task_state(upstream_id: str, data: dict[str, Any]) -> UpstreamTask:
    status = _STATUSES.get(text(data, "task_status"), UNKNOWN)
    task = UpstreamTask(upstream_id, status)
    if status == "SUCCESS":
        task.progress = 100
        task.outputs = [_video(v) for v in objects(obj(data, "task_result"), "videos") if text(v, "url")]
    elif status == "FAILURE":
        task.fail_reason = text(data, "task_status_msg") or "The Kling task failed."
        task.error_type = "generation_failed"
    return task


def _video(video: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"url": text(video, "url"), "content_type": "video/mp4"}
    if text(video, "id"):
        out["id"] = text(video, "id")
    seconds = number(video.get("duration"))
    if seconds is not None and seconds > 0:
        out["duration"] = seconds
    return out


# -- the request body --


def request_body(job: TaskSubmission, model: str) -> dict[str, Any]:
    fields = job.fields
    native = fields.get("native")
    if fields.get("native_format") == "kling" and isinstance(native, dict):
        body = dict(native)
        for key in ("image", "image_tail"):
            if isinstance(body.get(key), str):
                body[key] = raw_base64(body[key])
        duration = body.get("duration")
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            body["duration"] = f"{duration:g}"  # Kling's duration is a string
    else:
        body = _canonical_body(job)
        metadata = fields.get("metadata")
        if isinstance(metadata, dict):
            body.update(metadata)  # vendor extras pass through, over the derived fields
    # The gateway signs its own callbacks; routing alone picks the model.
    body.pop("callback_url", None)
    body.pop("model", None)
    body["model_name"] = model
    return body


def _canonical_body(job: TaskSubmission) -> dict[str, Any]:
    fields = job.fields
    body: dict[str, Any] = {}
    for key in ("prompt", "negative_prompt", "cfg_scale", "mode", "external_task_id"):
        if fields.get(key) not in (None, ""):
            body[key] = fields[key]
    if job.action == "text2video" and (aspect := aspect_ratio(fields)):
        body["aspect_ratio"] = aspect
    seconds = fields.get("seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        body["duration"] = str(min(_DURATIONS, key=lambda d: abs(d - seconds)))
    for key in ("image", "image_tail"):
        upload = job.files.get(key)
        if upload is not None:
            body[key] = file_base64(upload)
        elif isinstance(fields.get(key), str) and fields[key]:
            body[key] = raw_base64(fields[key])
    return body
