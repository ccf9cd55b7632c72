"""An S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph...) as the file store, through
obstore (Rust's `object_store` crate: native asyncio, streaming reads, multipart uploads, one
small wheel with no botocore; docs/architecture.md says why).

Credentials are the standard chain, which obstore reads itself as the OpenTelemetry SDK reads
its own variables: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), or a web
identity or container role. The config file names the bucket, never a secret, and no message
this module writes carries one: failures are reduced to the store's status and error code.

Timeouts and retries are short: a store that does not answer is a 503 for this request within
seconds (the client retries), not a request hung on a minute of back-off.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from unigate.edge.media_types import SNIFF_BYTES
from unigate.errors import StorageUnavailable
from unigate.extras import require
from unigate.storage.base import CHUNK, StoredObject, check_key, no_chunks

if TYPE_CHECKING:
    from obstore.store import S3Store

    from unigate.config import StorageConfig

log = logging.getLogger("unigate.storage")

CONNECT_TIMEOUT = "5s"
# Whole-request ceiling (object_store's default is 30 s): a large file streamed to a slow
# client must not be cut off by it.
REQUEST_TIMEOUT = "30m"
MAX_RETRIES = 2
_SETTLE_SECONDS = 0.2
RETRY_WINDOW = timedelta(seconds=8)


def _store(config: StorageConfig) -> S3Store:
    require("s3")
    from obstore.store import S3Store

    options: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT, "timeout": REQUEST_TIMEOUT}
    kwargs: dict[str, Any] = {}
    if config.endpoint_url:
        endpoint = config.endpoint_url.rstrip("/")
        if not config.path_style:
            # Virtual-hosted style on a custom endpoint: the bucket is part of the host, as
            # boto3 builds it (object_store then takes the endpoint as the bucket's URL).
            parts = urlsplit(endpoint)
            endpoint = urlunsplit(parts._replace(netloc=f"{config.bucket}.{parts.netloc}"))
        kwargs["endpoint"] = endpoint
        options["allow_http"] = endpoint.startswith("http://")
    kwargs["virtual_hosted_style_request"] = not config.path_style
    if config.region:
        kwargs["region"] = config.region
    retry = {
        "max_retries": MAX_RETRIES,
        "retry_timeout": RETRY_WINDOW,
        "backoff": {
            "init_backoff": timedelta(milliseconds=100),
            "max_backoff": timedelta(seconds=2),
            "base": 2,
        },
    }
    return S3Store(
        config.bucket,
        prefix=config.prefix.strip("/") or None,
        client_options=options,  # type: ignore[arg-type]
        retry_config=retry,  # type: ignore[arg-type]
        **kwargs,
    )


class S3Storage:
    shared = True

    def __init__(self, config: StorageConfig) -> None:
        self.config = config
        self.store = _store(config)

    def describe(self) -> str:
        where = f"s3://{self.config.bucket}/{self.config.prefix.strip('/')}".rstrip("/")
        return f"{where} at {self.config.endpoint_url}" if self.config.endpoint_url else where

    async def check(self) -> None:
        """List (the bucket exists and may be read), then write and delete a probe object
        (the credentials may write): a store that fails either is refused at start-up.
        Through obstore's blocking calls in a thread: the check runs in a short-lived event
        loop, and an async call's Rust side still finishing as that loop closes and the
        process exits can abort the interpreter (see `aclose`)."""
        try:
            await asyncio.to_thread(self._check)
        except Exception as exc:
            raise StorageUnavailable(reason(exc)) from None

    def _check(self) -> None:
        import obstore

        for _ in obstore.list(self.store, chunk_size=1):
            break
        probe = f".unigate-probe-{secrets.token_hex(6)}"
        obstore.put(self.store, probe, b"")
        obstore.delete(self.store, probe)

    async def put(self, key: str, data: bytes) -> None:
        import obstore

        try:
            await obstore.put_async(self.store, check_key(key), data)
        except Exception as exc:
            raise _failed("write", key, exc) from None

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> None:
        import obstore

        source = _Source(chunks)
        try:
            # A multipart upload of 5 MiB parts: what an upload holds in memory is a few parts,
            # whatever its size; an upload that fails is aborted, so no part stays behind.
            await obstore.put_async(self.store, check_key(key), source)
        except Exception as exc:
            if source.error is not None:  # the caller's own refusal (too large, quota, client gone)
                raise source.error from None
            raise _failed("write", key, exc) from None
        if source.error is not None:
            raise source.error

    async def read(self, key: str) -> bytes | None:
        import obstore

        try:
            result = await obstore.get_async(self.store, check_key(key))
            return bytes(await result.bytes_async())
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise _failed("read", key, exc) from None

    async def open(self, key: str, head_only: bool = False) -> StoredObject | None:
        import obstore

        check_key(key)
        try:
            if head_only:
                meta = await obstore.head_async(self.store, key)
                size = int(meta["size"])
                if size == 0:
                    return StoredObject(0, b"", no_chunks())
                ranged = await obstore.get_async(
                    self.store, key, options={"range": (0, min(size, SNIFF_BYTES))}
                )
                return StoredObject(size, bytes(await ranged.bytes_async()), no_chunks())
            result = await obstore.get_async(self.store, key)
            size = int(result.meta["size"])
            stream = result.stream(min_chunk_size=CHUNK)
            head = b""
            async for chunk in stream:  # the content check needs SNIFF_BYTES before headers go
                head += bytes(chunk)
                if len(head) >= SNIFF_BYTES:
                    break
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise _failed("read", key, exc) from None
        return StoredObject(size, head, _rest(stream, key))

    async def exists(self, key: str) -> bool:
        import obstore

        try:
            await obstore.head_async(self.store, check_key(key))
        except FileNotFoundError:
            return False
        except Exception as exc:
            raise _failed("look up", key, exc) from None
        return True

    async def delete(self, key: str) -> None:
        import obstore

        try:
            await obstore.delete_async(self.store, check_key(key))
        except FileNotFoundError:
            return
        except Exception as exc:
            raise _failed("delete", key, exc) from None

    async def delete_prefix(self, prefix: str) -> None:
        import obstore

        check_key(prefix)
        folder = prefix.rpartition("/")[0]
        doomed: list[str] = []
        try:
            # object_store lists by whole path segments, so the folder is listed from just
            # before the prefix (S3's start-after) and read until the names move past it.
            async for batch in obstore.list(self.store, folder or None, offset=prefix, chunk_size=100):
                names = [m["path"] for m in batch]
                doomed += [n for n in names if n.startswith(prefix)]
                if names and not names[-1].startswith(prefix):
                    break
            if doomed:
                await obstore.delete_async(self.store, doomed)
        except Exception as exc:
            raise _failed("delete", prefix, exc) from None

    async def aclose(self) -> None:
        # obstore resolves an async call's future from its own threads and then releases the
        # call's Python objects; an interpreter that starts finalizing in that instant aborts
        # the process (SIGABRT at exit, seen with a call finishing just before the loop
        # closed). A worker's last media request ends before shutdown; this pause covers one
        # finishing at that very moment. The connection pool goes with the store object.
        await asyncio.sleep(_SETTLE_SECONDS)


class _Source:
    """The chunks of a streamed put, keeping the exception that ended them: obstore reports a
    failed source as its own error, and the caller's (a 413, a quota) must reach the client."""

    def __init__(self, chunks: AsyncIterable[bytes]) -> None:
        self._chunks = chunks.__aiter__()
        self.error: BaseException | None = None

    def __aiter__(self) -> _Source:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            raise
        except BaseException as exc:
            self.error = exc
            raise


async def _rest(stream: AsyncIterator[Any], key: str) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream:
            yield bytes(chunk)
    except Exception as exc:
        raise _failed("read", key, exc) from None


def _failed(action: str, key: str, exc: BaseException) -> StorageUnavailable:
    why = reason(exc)
    log.warning("storage: cannot %s %s: %s", action, _shown(key), why)
    return StorageUnavailable(why)


def _shown(key: str) -> str:
    """A key as log lines show it: media names are capabilities, so only their start."""
    folder, _, name = key.rpartition("/")
    return f"{folder}/{name[:8]}…" if len(name) > 8 else key


def reason(exc: BaseException) -> str:
    """A store failure in a few words: the HTTP status and S3 error code, or what failed on
    the way (connection refused, timeout). object_store's own text quotes whole responses,
    which can name the access key id; none of it is passed on."""
    text = str(exc)
    code = re.search(r"<Code>([A-Za-z0-9.]{1,64})</Code>", text)
    status = re.search(r"status code: (\d{3}[A-Za-z ]{0,40})", text)
    if status is not None:
        return status.group(1).strip() + (f" ({code.group(1)})" if code else "")
    os_message = re.search(r'message: "([^"\n]{1,80})"', text)
    if os_message is not None:
        return os_message.group(1)
    if "timed out" in text or "timeout" in text.lower():
        return "no answer in time"
    if "error sending request" in text:
        return "the connection failed"
    first = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"https?://\S+", "(endpoint)", first)[:160]
