"""One Anthropic- or Gemini-format call on its way through `TextAPI.serve`: which route takes it
and how. A route whose upstream speaks the client's own format gets the client's request itself
(its body bytes with only the model id replaced, its query string, its vendor headers); any
other route gets the canonical (OpenAI chat) request, translated once, on the first route that
needs it. A request the translation refuses is refused only by the translated routes (the
client gets that 400 when no route could take it), and what a translated route could not carry
is named in `x-unigate-dropped-fields`. A hosted tool the translation could not carry (a server
tool without an equivalent) follows the `hosted_tools` policy (`api/serving/hosted_tools.py`): named
and logged, or, with `reject`, the translated routes refuse the call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from unigate.api.serving.hosted_tools import HostedTools
from unigate.errors import InvalidRequest
from unigate.providers.base import Reply, Target, TextCall, Unsupported
from unigate.providers.same_format import ClientRequest
from unigate.translate.translation import Json, Translation, with_dropped


class DialectCall:
    def __init__(
        self,
        fmt: str,
        payload: Json,
        model: str,
        stream: bool,
        client: ClientRequest,
        translate: Callable[[], Translation],
        native_formats: frozenset[str] = frozenset(),
        hosted: HostedTools | None = None,
        key_id: str = "",
    ) -> None:
        """`fmt`: the client's format; `native_formats`: further upstream formats that take
        the client's request as it is (an upstream that makes Gemini's image output);
        `hosted`: the `hosted_tools` policy and its log, for the calls of key `key_id`."""
        self.fmt = fmt
        self.payload = payload
        self.model = model
        self.stream = stream
        self.client = client
        self.native_formats = native_formats | {fmt}
        self._translate = translate
        self.hosted = hosted
        self.key_id = key_id
        self._translation: Translation | None = None
        self._refused: InvalidRequest | None = None
        self._call: TextCall | None = None

    def text_call(self) -> TextCall:
        """What `TextAPI.serve` accounts the call by: the client's own request (its text counts
        against token limits)."""
        raw = self.client.raw or b""
        return TextCall("chat", raw, self.payload, self.model, self.stream, self.stream)

    def translation(self) -> Translation:
        """The canonical request, built on first use; `Unsupported` (a translated route is
        skipped) when the translation refuses the request."""
        if self._translation is None and self._refused is None:
            try:
                self._translation = self._translate()
            except InvalidRequest as exc:
                self._refused = exc
        if self._refused is not None:
            refused = self._refused
            raise Unsupported(refused.message, code=refused.code, param=refused.param)
        assert self._translation is not None
        return self._translation

    def route(self, target: Target) -> Awaitable[Reply]:
        provider = target.provider
        if provider.native_formats & self.native_formats:
            return provider.native(self.payload, target, self.stream, self.client)
        translation = self.translation()
        if self.hosted is not None:
            self.hosted.check(translation)
        if self._call is None:
            # Serialised by the adapter that sends it as JSON (one with the upstream's model).
            canonical = translation.canonical
            self._call = TextCall("chat", b"", canonical, self.model, self.stream, self.stream)
        return provider.chat(self._call, target)

    async def finish(self, reply: Reply, target: Target) -> Reply:
        """A translated answer names what its route could not honour."""
        if reply.wire == self.fmt or self._translation is None:
            return reply
        reply.headers = with_dropped(reply.headers, self._translation.dropped_for(target.provider.protocol))
        if self.hosted is not None:
            self.hosted.note(self.key_id, target, self._translation)
        return reply
