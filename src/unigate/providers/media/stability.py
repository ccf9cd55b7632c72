"""`stability` protocol: Stability AI's `POST {base}/v2beta/stable-image/generate/{variant}`.
The form is rebuilt from the validated parts; the client's Accept decides between image bytes
(relayed with their `finish-reason` and `seed` headers) and base64 JSON."""

from __future__ import annotations

from unigate.providers.base import MediaCall, Reply, Target
from unigate.providers.form_body import FormBody
from unigate.providers.http import raise_for_answer, read_all
from unigate.providers.media.bearer import BearerProvider
from unigate.providers.upstream_status import Said, json_body

PROVIDER_TYPE = "stability"
_PASSED_HEADERS = ("finish-reason", "seed")


class StabilityProvider(BearerProvider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"stability.generate"})
    default_base_url = "https://api.stability.ai"
    json_body = False

    async def media(self, call: MediaCall, target: Target) -> Reply:
        if call.op != "stability.generate" or call.form is None:
            return await super().media(call, target)
        replace = {"model": target.upstream_model} if call.variant == "sd3" else {}
        form = FormBody(call.form, replace)
        accept = "application/json" if "application/json" in call.accept else "image/*"
        headers = {"Accept": accept}
        path = f"/v2beta/stable-image/generate/{call.variant}"
        resp = await self.http.post(path, form, target.timeouts, headers)
        if resp.status >= 400:
            await raise_for_answer(resp, _said, "Stability")
        data = await read_all(resp)
        resp.release()
        content_type = resp.headers.get("Content-Type", "application/octet-stream").encode("latin-1")
        passed = [
            (h.encode(), resp.headers[h].encode("latin-1")) for h in _PASSED_HEADERS if h in resp.headers
        ]
        return Reply(content_type=content_type, body=data, headers=passed)


def _said(data: bytes) -> Said:
    """Stability's errors: `{"id", "name", "errors": [...]}`."""
    error = json_body(data)
    errors = error.get("errors") if isinstance(error, dict) else None
    if isinstance(errors, list) and errors and all(isinstance(e, str) for e in errors):
        return Said("; ".join(errors))
    return Said()
