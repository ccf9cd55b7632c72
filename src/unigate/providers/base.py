"""The provider interface: one adapter per upstream wire protocol.

An adapter implements only the capabilities its upstream has (`chat`, `complete`, `embed`,
`moderate`, `media`, `submit_task`, ...). Each takes the client's call in the
gateway's inbound format and a resolved `Target`, and returns a `Reply` whose body or
stream is already in the client's wire format.

Failure contract, mapped once here at the adapter edge:
- `RouteFailed`: nothing was sent to the client and another route may succeed
  (connect error, timeout, 5xx, 429, upstream auth failure). The router tries the next one.
- `UpstreamRejected` (errors.py): the upstream refused the client's request (4xx); relayed.
- `StreamBroken`: the upstream died after the first byte; the client stream ends with an
  in-band error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from unigate.config import ProviderConfig
from unigate.errors import InvalidRequest, UpstreamRejected
from unigate.providers.redact import Redactor, retry_after

if TYPE_CHECKING:
    from unigate.batches.native import NativeBatches
    from unigate.edge.multipart import Form
    from unigate.providers.same_format import ClientRequest
    from unigate.storage import Storage
from unigate.usage.recorder import Usage


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    read: float  # longest silence between upstream bytes
    total: float


@dataclass(slots=True)
class TextCall:
    """A text-family call in OpenAI format: `op` is chat | completions | embeddings | moderations."""

    op: str
    # The client's raw JSON, forwarded untouched where the formats match; empty for a request
    # the gateway made (a translation), which an adapter serialises only if it sends it as JSON.
    body: bytes
    payload: dict[str, Any]  # the same body, parsed
    model: str  # the id the client sent
    stream: bool = False
    include_usage: bool = False  # the client asked for the final usage chunk


@dataclass(slots=True)
class Target:
    """One route resolved for one request: which adapter, which upstream model."""

    provider: Provider
    upstream_model: str
    timeouts: Timeouts
    route_key: str


@dataclass(slots=True)
class Reply:
    """What an adapter hands back. Exactly one of `body` / `stream` is used.

    A stream yields complete SSE events in the client's format; the adapter fills `usage`
    as it goes and `close` releases the upstream connection early (client went away)."""

    status: int = 200
    content_type: bytes = b"application/json"
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None
    usage: Usage = field(default_factory=Usage)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    close: Callable[[], Any] | None = None
    wire: str = "openai"  # the format of body/stream: "openai", or a native one relayed as is


# Synchronous media operations, named by their endpoint family: the ops an adapter's
# `media()` may be handed.
MEDIA_OPS = frozenset(
    {
        "audio.transcriptions",
        "audio.translations",
        "audio.speech",
        "images.generations",
        "images.edits",
        "fish.tts",
        "fish.asr",
        "stability.generate",
    }
)


@dataclass(slots=True)
class MediaCall:
    """A synchronous audio or image call, validated at the edge. JSON calls carry `payload`;
    multipart calls carry the `form` (files spooled, names as sent) and `payload` holds its
    text fields, first values. `variant` and `accept` are Stability's path tail and Accept."""

    op: str
    model: str
    payload: dict[str, Any]
    form: Form | None = None
    raw: bytes = b""  # a JSON body as received, forwarded untouched where nothing changes
    variant: str = ""
    accept: str = ""
    public_base: str = ""  # the gateway's URL as the client sees it, for links it serves itself


@dataclass(frozen=True, slots=True)
class InputFile:
    """A file a job starts from, as the client uploaded it."""

    data: bytes
    filename: str = "upload"
    content_type: str = "application/octet-stream"


@dataclass(slots=True)
class TaskSubmission:
    """An asynchronous job for an upstream. `family` is the path family that created it
    (music, openai-video, video, kling, veo, vidu, picwish); `action` the job's verb (MUSIC,
    LYRICS, UPLOAD, text2video, image2video, remix, text2audio, lip-sync, or a PicWish
    `visual/<tool>` / `document/<tool>`); `fields` the validated request fields. Video jobs
    carry the canonical fields of `unigate.video.job`, whatever format the client used."""

    family: str
    action: str
    model: str
    fields: dict[str, Any]
    upload: bytes | None = None  # the audio file a music UPLOAD job starts from
    upload_name: str = ""
    files: dict[str, InputFile] = field(default_factory=dict)  # named input files (image, mask)


@dataclass(frozen=True, slots=True)
class TaskRef:
    """What an adapter needs to find one of its jobs again."""

    upstream_id: str
    action: str


@dataclass(slots=True)
class SubmitResult:
    upstream_id: str
    clip_ids: list[str] = field(default_factory=list)  # upstream clip ids, when already known


@dataclass(slots=True)
class UpstreamTask:
    """One task's state as the upstream reports it, already mapped to the task vocabulary
    (SUBMITTED, QUEUED, IN_PROGRESS, SUCCESS, FAILURE; UNKNOWN never ends a task)."""

    upstream_id: str
    status: str
    progress: int | None = None
    fail_reason: str = ""
    error_type: str = ""
    clips: list[dict[str, Any]] = field(default_factory=list)
    lyrics: dict[str, Any] | None = None
    # Produced files (video, audio, image, document): each {"url", and where known
    # "cover_url", "thumbnail_url", "spritesheet_url", "duration", "width", "height",
    # "content_type", "id"}. A relative url ("/media/...") is served by the gateway itself;
    # "private": True marks an upstream url that needs the provider's credentials, which the
    # gateway fetches for the client (`Provider.task_content`).
    outputs: list[dict[str, Any]] = field(default_factory=list)
    start_time: int | None = None  # the upstream's own start time (unix seconds), if it says


class RouteFailed(Exception):
    """This route could not answer; the next one may. `status` is what the client would
    get if every route fails this way. `cause` says where it failed (`dns`, `connect`, `tls`,
    `proxy`, `timeout`, or `answer` with the `upstream_status` it answered), for diagnoses."""

    def __init__(
        self,
        message: str,
        status: int = 502,
        retry_after: str | None = None,
        *,
        cause: str = "",
        upstream_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.cause = cause
        self.upstream_status = upstream_status


def scrubbed(error: RouteFailed | UpstreamRejected, redactor: Redactor) -> None:
    """Blank the provider's secrets out of an error an adapter raised, in place: its message,
    relayed body and headers; a Retry-After that is not seconds or a date is dropped."""
    error.message = redactor.text(error.message)
    error.args = (error.message,)
    if isinstance(error, RouteFailed):
        error.retry_after = retry_after(error.retry_after)
        return
    if error.raw_openai_body is not None:
        error.raw_openai_body = redactor.data(error.raw_openai_body)
    error.headers = {name: redactor.text(value) for name, value in error.headers.items()}


class StreamBroken(Exception):
    """The upstream stream failed after bytes were already relayed."""


class UrlFetcher(Protocol):
    """Fetches a client-supplied URL through the SSRF guard: (body, content type)."""

    async def __call__(self, url: str, max_bytes: int) -> tuple[bytes, str]: ...


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """Process-wide facilities an adapter may need, handed in at construction."""

    data_dir: Path
    music_seconds: float = 8.0  # how long the sandbox's music jobs take
    task_seconds: float = 4.0  # how long the sandbox's other jobs (video, audio, visual) take
    fetch_url: UrlFetcher | None = None  # for inputs the gateway itself must download
    # Where files the gateway serves under /media/ are kept (storage/); None: the data dir.
    storage: Storage | None = None


class Provider:
    """Base adapter: every capability is absent until a subclass implements it."""

    protocol: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = frozenset()
    # Client formats this upstream speaks itself: such calls are relayed without translation.
    # An adapter may widen it per instance from its config (openai's `responses: native`).
    native_formats: frozenset[str] = frozenset()

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        self.config = config
        self.name = config.name
        self.context = context
        # Blanks this provider's secrets from upstream errors (routing applies it to every
        # error an adapter raises; transport to every error answer).
        self.redactor = Redactor.for_provider(config)

    def timeouts(self) -> Timeouts:
        c = self.config
        return Timeouts(connect=c.connect_timeout, read=c.read_timeout, total=c.total_timeout)

    async def start(self) -> None:
        """Open pooled connections; called once inside the running event loop."""

    async def aclose(self) -> None:
        """Release pooled connections."""

    def in_use(self) -> int:
        """Upstream exchanges under way: a provider a config reload dropped is closed once
        this is 0 (or after its longest timeout). Adapters keep their pool as `self.http`;
        one with nothing pooled there has nothing to wait for."""
        http = getattr(self, "http", None)
        return int(http.in_use()) if http is not None else 0

    async def chat(self, call: TextCall, target: Target) -> Reply:
        raise _unsupported(self, "chat completions")

    async def complete(self, call: TextCall, target: Target) -> Reply:
        raise _unsupported(self, "text completions")

    async def embed(self, call: TextCall, target: Target) -> Reply:
        raise _unsupported(self, "embeddings")

    async def moderate(self, call: TextCall, target: Target) -> Reply:
        raise _unsupported(self, "moderations")

    async def media(self, call: MediaCall, target: Target) -> Reply:
        """A synchronous audio/image call (`call.op` in MEDIA_OPS): a JSON body, or a binary
        stream whose `content_type` says what it is."""
        raise _unsupported(self, call.op.replace(".", " "))

    async def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: ClientRequest | None = None
    ) -> Reply:
        """Relay a request already in one of `native_formats` (model id mapped, nothing else
        touched; `client`: its bytes, query and vendor headers, where the adapter relays them);
        the Reply's `wire` names that format."""
        raise _unsupported(self, "native requests")

    async def count_native(self, payload: dict[str, Any], target: Target, client: ClientRequest) -> Reply:
        """The upstream's own token count for a request in one of `native_formats`, its answer
        relayed as is (Anthropic's `count_tokens`, Gemini's `countTokens`)."""
        raise _unsupported(self, "token counting")

    async def embed_native(
        self, payload: dict[str, Any], target: Target, client: ClientRequest, batch: bool
    ) -> Reply:
        """Embeddings asked in one of `native_formats` (Gemini's `embedContent`, or
        `batchEmbedContents` when `batch`), relayed with only the model ids changed."""
        raise _unsupported(self, "native embeddings")

    async def count_canonical(self, payload: dict[str, Any], target: Target) -> int:
        """The upstream's own count of the input tokens of a chat request in the canonical
        (OpenAI) form, for a client of another format."""
        raise _unsupported(self, "token counting")

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        """Start an upstream job; raise RouteFailed (try another route) or UpstreamRejected."""
        raise _unsupported(self, f"{job.family} tasks")

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        """Current state of several jobs (keyed by upstream id), in one call where the
        upstream allows it. Jobs the upstream does not report are left out (the poller
        retries them later, until the task's deadline)."""
        raise _unsupported(self, "task polling")

    async def task_content(
        self, ref: TaskRef, output: dict[str, Any], variant: str, timeouts: Timeouts
    ) -> Reply:
        """The bytes of a private output (see `UpstreamTask.outputs`) as a streamed Reply;
        `variant` is video | thumbnail | spritesheet."""
        raise _unsupported(self, "task downloads")

    async def delete_task(self, ref: TaskRef, timeouts: Timeouts) -> None:
        """Delete a finished job and its files upstream, where the upstream has that."""
        return None

    def native_batches(self) -> NativeBatches | None:
        """The vendor's own batch API, when the provider is configured `batches: native` and
        its upstream has one (batches/native.py); None: the gateway runs batch lines itself."""
        return None

    async def list_models(self, timeouts: Timeouts) -> list[str]:
        """The model ids the upstream lists (`providers/model_list.py`): one cheap request,
        for start-up and `unigate providers check`."""
        raise _unsupported(self, "model listing")


class Unsupported(InvalidRequest):
    """The route's provider lacks the operation asked for. Routing skips such a route (not a
    failure: no cooldown, no fallback warning); the client gets this 400 only when no route
    of the model has the operation."""


def _unsupported(provider: Provider, what: str) -> Unsupported:
    return Unsupported(f"The model's provider does not support {what}.", code="unsupported_operation")
