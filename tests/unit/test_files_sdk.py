"""The `openai` SDK's `files` client against the gateway in process: create (with and without an
expiry policy), list with its auto-pagination, retrieve, content, delete, and the SDK's own
errors for a missing file and a refused purpose."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.support.in_process import BASE_URL, InProcessGateway

LINES = b'{"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n'


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("files-sdk"), {"sandbox": {"enabled": True}}) as gateway:
        yield gateway


def sdk(gw: InProcessGateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=BASE_URL + "/v1", api_key=key, http_client=gw.client(), max_retries=0)


def test_the_sdk_creates_lists_retrieves_downloads_and_deletes(gw: InProcessGateway) -> None:
    client = sdk(gw, gw.create_key())

    async def go() -> dict[str, Any]:
        created = await client.files.create(file=("requests.jsonl", LINES), purpose="batch")
        expiring = await client.files.create(
            file=("notes.txt", b"hello\n"),
            purpose="user_data",
            expires_after={"anchor": "created_at", "seconds": 3600},
        )
        more = [await client.files.create(file=(f"{i}.txt", b"x"), purpose="user_data") for i in range(3)]
        listed = [f.id async for f in client.files.list(limit=2)]  # the SDK follows `after` pages
        first_page = await client.files.list(limit=2, order="asc")
        batch_only = [f.id async for f in client.files.list(purpose="batch")]
        retrieved = await client.files.retrieve(created.id)
        content = await client.files.content(created.id)
        deleted = await client.files.delete(expiring.id)
        after_delete = [f.id async for f in client.files.list()]
        return {
            "created": created,
            "expiring": expiring,
            "more": more,
            "listed": listed,
            "first_page": first_page,
            "batch_only": batch_only,
            "retrieved": retrieved,
            "content": content.read(),
            "deleted": deleted,
            "after_delete": after_delete,
        }

    got = gw.run(go())
    created, expiring, more = got["created"], got["expiring"], got["more"]
    assert created.object == "file" and created.purpose == "batch" and created.status == "processed"
    assert created.bytes == len(LINES) and created.filename == "requests.jsonl"
    assert created.expires_at == created.created_at + 30 * 86400
    assert expiring.expires_at == expiring.created_at + 3600
    ids = [created.id, expiring.id, *(f.id for f in more)]
    assert got["listed"] == ids[::-1]
    assert [f.id for f in got["first_page"].data] == ids[:2] and got["first_page"].has_more
    assert got["batch_only"] == [created.id]
    assert got["retrieved"] == created
    assert got["content"] == LINES
    assert got["deleted"].id == expiring.id and got["deleted"].deleted and got["deleted"].object == "file"
    assert expiring.id not in got["after_delete"] and len(got["after_delete"]) == 4


def test_the_sdk_raises_its_own_errors(gw: InProcessGateway) -> None:
    owner, other = sdk(gw, gw.create_key()), sdk(gw, gw.create_key())

    async def go() -> None:
        created = await owner.files.create(file=("a.jsonl", LINES), purpose="batch")
        with pytest.raises(openai.NotFoundError) as missing:
            await other.files.retrieve(created.id)
        assert missing.value.code == "file_not_found"
        with pytest.raises(openai.NotFoundError):
            await other.files.content(created.id)
        with pytest.raises(openai.NotFoundError):
            await other.files.delete(created.id)
        with pytest.raises(openai.BadRequestError) as bad:
            await owner.files.create(file=("a.jsonl", LINES), purpose="batch_output")  # type: ignore[arg-type]
        assert bad.value.param == "purpose" and "user_data" in bad.value.message

    gw.run(go())
