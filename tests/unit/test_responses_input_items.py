"""`GET /v1/responses/{id}/input_items` of a chained response lists the whole context it was
generated from, as OpenAI lists it: the earlier turns' inputs and outputs in order, then this
turn's inputs, paged by `order`, `after` and `limit` (in process, through the openai SDK)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.in_process import BASE_URL, InProcessGateway


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    with InProcessGateway(tmp_path_factory.mktemp("items")) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def client(gw: InProcessGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=BASE_URL + "/v1", api_key=gw.create_key(), http_client=gw.client(), max_retries=0
    )


def _items(gw: InProcessGateway, client: openai.AsyncOpenAI, response_id: str, **query: Any) -> Any:
    """One page of the listing (the SDK's paginator is awaitable, not a coroutine)."""

    async def page() -> Any:
        return await client.responses.input_items.list(response_id, **query)

    return gw.run(page())


def _shape(items: Any) -> list[tuple[str, str]]:
    return [(item.type, getattr(item, "role", "")) for item in items]


async def _chain(client: openai.AsyncOpenAI, model: str) -> list[Any]:
    first = await client.responses.create(model=model, input="My name is Ada.", instructions="Be brief.")
    second = await client.responses.create(
        model=model,
        input=[{"role": "developer", "content": "Answer kindly."}, {"role": "user", "content": "Who am I?"}],
        previous_response_id=first.id,
    )
    third = await client.responses.create(model=model, input="Thanks!", previous_response_id=second.id)
    return [first, second, third]


def test_a_chained_response_lists_every_turn(gw: InProcessGateway, client: openai.AsyncOpenAI) -> None:
    first, second, third = gw.run(_chain(client, "sandbox-chat"))
    listed = _items(gw, client, third.id, order="asc", limit=100)
    expected = [
        ("message", "user"),  # turn 1's input (instructions are not input items)
        ("message", "assistant"),  # turn 1's output
        ("message", "developer"),  # turn 2's inputs
        ("message", "user"),
        ("message", "assistant"),  # turn 2's output
        ("message", "user"),  # turn 3's input
    ]
    assert _shape(listed.data) == expected and not listed.has_more
    ids = [item.id for item in listed.data]
    assert ids[1] == first.output[0].id and ids[4] == second.output[0].id
    assert len(set(ids)) == len(ids)
    newest = _items(gw, client, third.id)  # desc by default
    assert [item.id for item in newest.data] == ids[::-1]
    # Paged: two at a time, each page after the last id of the one before.
    pages, after = [], None
    while True:
        page = _items(gw, client, third.id, order="asc", limit=2, **({"after": after} if after else {}))
        pages.append([item.id for item in page.data])
        after = page.last_id
        if not page.has_more:
            break
    assert pages == [ids[0:2], ids[2:4], ids[4:6]]
    # The first turn lists only its own input; the second, turn 1 and its own.
    assert _shape(_items(gw, client, first.id).data) == [("message", "user")]
    assert len(_items(gw, client, second.id, limit=100).data) == 4


def test_the_listing_is_the_one_openai_gives(gw: InProcessGateway, client: openai.AsyncOpenAI) -> None:
    """The same conversation on the fake OpenAI upstream (which lists as OpenAI does) and on the
    sandbox through the gateway lists the same kinds of items in the same order."""
    with FakeOpenAIResponses() as fake:
        upstream = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        async def both() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
            theirs = (await _chain(upstream, "gpt-fake"))[-1]
            ours = (await _chain(client, "sandbox-chat"))[-1]
            listed_theirs = await upstream.responses.input_items.list(theirs.id, order="asc")
            listed_ours = await client.responses.input_items.list(ours.id, order="asc")
            await upstream.close()
            return _shape(listed_theirs.data), _shape(listed_ours.data)

        theirs, ours = gw.run(both())
    assert ours == theirs and len(ours) == 6
