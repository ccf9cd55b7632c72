"""A fake Kling official video API on 127.0.0.1 (gateway `base_url` = `root`, no /v1: the paths
carry it), built on fake_tasks (timelines, recording, /files/ serving).

Auth: `Authorization: Bearer <JWT>`, checked like Kling does: three base64url parts, header
`alg` HS256, signature HMAC-SHA256 with `secret_key`, claim `iss` == `access_key`, `exp` in
the future but no later than now + 1800 s + `token_slack`, `nbf` (when present) not in the
future. Refusals are HTTP 401 with Kling's codes: 1001 no Authorization, 1002 malformed
token / wrong scheme / alg / lifetime too long, 1000 wrong signature or issuer, 1003 not yet
valid, 1004 expired. The gateway's key for this fake is `gateway_key` ("<ak>:<sk>");
`mint()` / `mint_token()` make tokens for direct tests, `decode_jwt()` reads one unverified.

  POST /v1/videos/text2video    JSON {model_name, prompt (required, <= 2500 chars),
                                negative_prompt, cfg_scale (0-1), mode (std|pro), aspect_ratio
                                (16:9|9:16|1:1), duration ("5"|"10", a string), sound
                                (on|off), camera_control, callback_url, external_task_id}
  POST /v1/videos/image2video   the same plus `image` (required) / `image_tail`: an http(s)
                                URL or raw base64 (a data: prefix is refused, as Kling does)
  -> {"code": 0, "message": "SUCCEED", "request_id", "data": {"task_id", "task_status":
      "submitted", "task_info": {"external_task_id"?}, "created_at", "updated_at"}} (ms)
  GET /v1/videos/{action}/{id}  id = the task_id or the external_task_id, under the action
                                it was submitted to; data {"task_id", "task_status":
                                submitted | processing | succeed | failed, "task_status_msg",
                                "task_info", "created_at", "updated_at", "task_result":
                                {"videos": [{"id", "url", "duration"}]} once succeed}
Generic stages show as: queued "submitted", running "processing", success "succeed",
failed "failed" (task_status_msg = the reason), unknown `UNKNOWN_STATUS`. The video is a real
MP4 at /files/<task_id>.mp4, with an AAC track when the submit asked `sound: "on"`, and its
`duration` echoes the requested one ("5" by default).

Errors are {"code", "message", "request_id"}: invalid JSON 400/1200, bad fields and
`submit_reject` 400/`reject_code` (1201 by default; 1301 is the content-policy refusal), a
reused external_task_id 400/1201, unknown task 404/1203 (an assumption: Kling's answer for
an unknown id is not pinned down here), `submit_status`/`poll_status` 429 -> 1302, 503 ->
5001, anything else -> 5000.

Not modelled: the task list endpoints (pageNum/pageSize), callbacks to `callback_url`,
other Kling families (images, lip-sync, effects, extend), account/balance codes 1100-1102,
concurrency limits (1303), IP allow-lists, result expiry after 30 days, and the size, ratio
or length of the returned video (always the same 1 s 160x96 clip).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from tests.support import task_fixtures
from tests.support.fake_tasks import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCESS,
    UNKNOWN,
    BodyError,
    Call,
    FakeTaskUpstream,
    Job,
    json_response,
)

ACTIONS = ("text2video", "image2video")
TOKEN_SECONDS = 1800
UNKNOWN_STATUS = "reviewing"
FAIL_MESSAGE = "Failure to pass the risk control system (fake)."
STATUSES = {
    QUEUED: "submitted",
    RUNNING: "processing",
    SUCCESS: "succeed",
    FAILED: "failed",
    UNKNOWN: UNKNOWN_STATUS,
}
_MODES = ("std", "pro")
_RATIOS = ("16:9", "9:16", "1:1")
_DURATIONS = ("5", "10")
_STATUS_CODES = {429: 1302, 503: 5001}


def b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def decode_jwt(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a JWT, unverified (for tests that inspect the gateway's token)."""
    head, claims, _ = token.split(".")
    return orjson.loads(b64url_decode(head)), orjson.loads(b64url_decode(claims))


def mint_token(access_key: str, secret_key: str, now: float | None = None, **claims: Any) -> str:
    """An HS256 token as Kling wants it: iss = access key, exp = now + 1800 s, nbf = now - 5 s
    (`claims` override or add)."""
    now = time.time() if now is None else now
    body = {"iss": access_key, "exp": int(now) + TOKEN_SECONDS, "nbf": int(now) - 5, **claims}
    head = _b64url(orjson.dumps({"alg": "HS256", "typ": "JWT"}))
    signing = head + b"." + _b64url(orjson.dumps(body))
    signature = hmac.new(secret_key.encode(), signing, hashlib.sha256).digest()
    return (signing + b"." + _b64url(signature)).decode()


@dataclass
class FakeKling(FakeTaskUpstream):
    access_key: str = "kling-access-key"
    secret_key: str = "kling-secret-key"
    token_slack: float = 60.0
    reject_code: int = 1201

    @property
    def base_url(self) -> str:
        return self.root

    @property
    def gateway_key(self) -> str:
        """The provider `api_key` the gateway mints its tokens from."""
        return f"{self.access_key}:{self.secret_key}"

    def mint(self, now: float | None = None, **claims: Any) -> str:
        """A token this fake accepts (claims override iss/exp/nbf), for direct tests."""
        return mint_token(self.access_key, self.secret_key, now, **claims)

    def _vendor_routes(self, app: web.Application) -> None:
        for action in ACTIONS:
            app.router.add_post(f"/v1/videos/{action}", self._submit)
        app.router.add_get("/v1/videos/{action}/{task_id}", self._query)

    # --- auth ------------------------------------------------------------------------

    def _refusal(self, request: web.Request) -> tuple[int, str] | None:
        """(Kling code, message) when the bearer token is not acceptable."""
        header = request.headers.get("Authorization", "").strip()
        if not header:
            return 1001, "Authorization is empty"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or token.count(".") != 2:
            return 1002, "Authorization is invalid"
        head_part, claims_part, signature_part = token.strip().split(".")
        try:
            head = orjson.loads(b64url_decode(head_part))
            claims = orjson.loads(b64url_decode(claims_part))
            signature = b64url_decode(signature_part)
        except (binascii.Error, ValueError):
            return 1002, "Authorization is invalid"
        if not isinstance(head, dict) or not isinstance(claims, dict) or head.get("alg") != "HS256":
            return 1002, "Authorization is invalid"
        expected = hmac.new(
            self.secret_key.encode(), f"{head_part}.{claims_part}".encode(), hashlib.sha256
        ).digest()
        if not hmac.compare_digest(signature, expected) or claims.get("iss") != self.access_key:
            return 1000, "Authentication failed"
        now = time.time()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not _is_number(exp) or (nbf is not None and not _is_number(nbf)):
            return 1002, "Authorization is invalid"
        assert exp is not None
        if exp <= now:
            return 1004, "Authorization has expired"
        if exp > now + TOKEN_SECONDS + self.token_slack:
            return 1002, "Authorization is invalid"
        if nbf is not None and nbf > now:
            return 1003, "Authorization is not yet valid"
        return None

    def _auth_error(self, request: web.Request, call: Call) -> web.Response | None:
        refusal = self._refusal(request)
        if refusal is None:
            return None
        code, message = refusal
        self._note(call, note=f"kling {code}: {message}")
        return _error(401, code, message)

    # --- handlers --------------------------------------------------------------------

    async def _submit(self, request: web.Request) -> web.Response:
        action = request.path.rsplit("/", 1)[-1]
        try:
            call = await self._read_body(request)
        except BodyError as exc:
            call = self._call(request)
            return self._auth_error(request, call) or _error(400, 1200, f"Invalid request body: {exc}")
        denied = self._auth_error(request, call)
        if denied is not None:
            return denied
        if not isinstance(call.json, dict):
            return _error(400, 1200, "The request body must be a JSON object")
        status, reject = self._gate("submit")
        if status != 200:
            return _error(status, _STATUS_CODES.get(status, 5000), "Server internal error (fake)")
        if reject:
            return _error(400, self.reject_code, "The request was rejected (fake)")
        body = call.json
        problem = _validate(action, body)
        external = body.get("external_task_id")
        if problem is None and external not in (None, ""):
            if not isinstance(external, str):
                problem = "external_task_id must be a string"
            elif self._find_where(lambda j: j.extra.get("external_task_id") == external):
                problem = f"external_task_id {external!r} already exists"
        if problem is not None:
            return _error(400, 1201, problem)
        extra = {"external_task_id": external} if external else {}
        job = self._new_job(call, action, dict(body), job_id=_task_id(), extra=extra)
        data = {
            "task_id": job.id,
            "task_status": STATUSES[self._peek(job)],
            "task_info": _task_info(job),
            "created_at": _ms(job.created),
            "updated_at": _ms(job.created),
        }
        return _ok(data)

    async def _query(self, request: web.Request) -> web.Response:
        action, task_id = request.match_info["action"], request.match_info["task_id"]
        call = self._poll_call(request, task_id)
        await self._hold()
        denied = self._auth_error(request, call)
        if denied is not None:
            return denied
        status, _ = self._gate("poll")
        if status != 200:
            return _error(status, _STATUS_CODES.get(status, 5000), "Server internal error (fake)")
        job = self._find(task_id) or self._find_where(lambda j: j.extra.get("external_task_id") == task_id)
        if job is None or job.kind != action:
            return _error(404, 1203, "The requested task does not exist")
        stage = self._step(call, job)
        return _ok(self._render(job, stage))

    def _render(self, job: Job, stage: str) -> dict[str, Any]:
        updated = job.finished or job.started or job.created
        data: dict[str, Any] = {
            "task_id": job.id,
            "task_status": STATUSES[stage],
            "task_status_msg": self._failure(FAIL_MESSAGE) if stage == FAILED else "",
            "task_info": _task_info(job),
            "created_at": _ms(job.created),
            "updated_at": _ms(updated),
        }
        if stage == SUCCESS:
            sound = job.params.get("sound") == "on"
            url = self._publish(f"{job.id}.mp4", "video/mp4", task_fixtures.mp4(audio=sound), job.id)
            duration = str(job.params.get("duration") or "5")
            data["task_result"] = {"videos": [{"id": f"{job.id}-v0", "url": url, "duration": duration}]}
        return data


def _validate(action: str, body: dict[str, Any]) -> str | None:
    """Why Kling would refuse these fields, or None."""
    prompt = body.get("prompt")
    if action == "text2video" and (not isinstance(prompt, str) or not prompt.strip()):
        return "prompt is required"
    if prompt is not None and (not isinstance(prompt, str) or len(prompt) > 2500):
        return "prompt must be a string of at most 2500 characters"
    if body.get("model_name") is not None and not isinstance(body["model_name"], str):
        return "model_name must be a string"
    choices = {"mode": _MODES, "aspect_ratio": _RATIOS, "duration": _DURATIONS, "sound": ("on", "off")}
    for name, allowed in choices.items():
        if body.get(name) is not None and body[name] not in allowed:
            return f"{name} must be one of {', '.join(allowed)}"
    cfg = body.get("cfg_scale")
    if cfg is not None and (not _is_number(cfg) or not 0 <= cfg <= 1):
        return "cfg_scale must be a number from 0 to 1"
    if action == "image2video":
        if not body.get("image"):
            return "image is required"
        for name in ("image", "image_tail"):
            if body.get(name) is not None and not _image_ok(body[name]):
                return f"{name} must be an http(s) URL or raw base64 (without a data: prefix)"
    return None


def _image_ok(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    if value.startswith(("http://", "https://")):
        return True
    try:
        return bool(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _task_id() -> str:
    return str(uuid.uuid4().int)[:19]


def _task_info(job: Job) -> dict[str, Any]:
    external = job.extra.get("external_task_id")
    return {"external_task_id": external} if external else {}


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _ok(data: dict[str, Any]) -> web.Response:
    return json_response(
        200, {"code": 0, "message": "SUCCEED", "request_id": str(uuid.uuid4()), "data": data}
    )


def _error(status: int, code: int, message: str) -> web.Response:
    return json_response(status, {"code": code, "message": message, "request_id": str(uuid.uuid4())})
