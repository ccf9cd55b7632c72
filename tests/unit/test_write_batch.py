"""Socket writes held to the end of the loop's turn (`write_batch.py`): nothing written before
the turn ends, then every held write in order, once; `now` and `close` write what is held
first; a large write is made at once; a closed transport gets nothing; one transport's failure
leaves the others their writes; one batch per loop, shared by the server and the client."""

from __future__ import annotations

import asyncio
import logging

import pytest

from unigate.write_batch import MAX_HELD, WriteBatch


class Transport:
    """Records writes and closes into one journal shared by every transport of a test."""

    def __init__(self, name: str, journal: list[tuple[str, bytes]], fails: bool = False) -> None:
        self.name = name
        self.journal = journal
        self.closing = False
        self.aborted = False
        self.fails = fails

    def write(self, data: bytes) -> None:
        assert not self.closing, "write after close"
        if self.fails:
            raise RuntimeError("the transport broke")
        self.journal.append((self.name, data))

    def close(self) -> None:
        self.closing = True
        self.journal.append((self.name, b"<close>"))

    def abort(self) -> None:
        self.closing = self.aborted = True

    def is_closing(self) -> bool:
        return self.closing


async def _next_turn() -> None:
    await asyncio.sleep(0)


def test_held_writes_go_out_when_the_turn_ends_in_the_order_asked() -> None:
    async def main() -> list[tuple[str, bytes]]:
        journal: list[tuple[str, bytes]] = []
        client, upstream = Transport("client", journal), Transport("upstream", journal)
        writes = WriteBatch.of(asyncio.get_running_loop())
        writes.later(upstream, b"request 1")
        writes.later(client, b"reply 0")
        writes.later(upstream, b"request 2")
        assert journal == []  # nothing before the turn ends
        await _next_turn()
        written = list(journal)
        await _next_turn()
        assert journal == written  # made once
        return written

    assert asyncio.run(main()) == [
        ("upstream", b"request 1"),
        ("client", b"reply 0"),
        ("upstream", b"request 2"),
    ]


def test_one_flush_is_scheduled_per_turn() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        writes = WriteBatch.of(loop)
        calls = 0
        original = loop.call_soon

        def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += args[0] == writes._turn_ended
            return original(*args, **kwargs)

        loop.call_soon = counting  # type: ignore[method-assign,assignment]
        journal: list[tuple[str, bytes]] = []
        for i in range(10):
            writes.later(Transport(f"t{i}", journal), b"x")
        await _next_turn()
        writes.later(Transport("next turn", journal), b"y")
        await _next_turn()
        loop.call_soon = original  # type: ignore[method-assign]
        assert len(journal) == 11
        return calls

    assert asyncio.run(main()) == 2  # one flush per turn that held writes


def test_now_and_close_write_what_is_held_first() -> None:
    async def main() -> list[tuple[str, bytes]]:
        journal: list[tuple[str, bytes]] = []
        a, b = Transport("a", journal), Transport("b", journal)
        writes = WriteBatch.of(asyncio.get_running_loop())
        writes.later(a, b"held")
        writes.now(b, b"at once")
        writes.later(a, b"last reply")
        writes.close(a)  # a connection not kept alive: its reply, then the close
        await _next_turn()
        return journal

    assert asyncio.run(main()) == [("a", b"held"), ("b", b"at once"), ("a", b"last reply"), ("a", b"<close>")]


def test_a_write_past_the_bound_is_made_at_once_after_what_was_held() -> None:
    async def main() -> list[tuple[str, int]]:
        journal: list[tuple[str, bytes]] = []
        t = Transport("t", journal)
        writes = WriteBatch.of(asyncio.get_running_loop())
        writes.later(t, b"small")
        writes.later(t, b"x" * MAX_HELD)  # a large body: not held, and flow control sees it now
        sizes = [(name, len(data)) for name, data in journal]
        writes.later(t, b"after")
        await _next_turn()
        return sizes + [(name, len(data)) for name, data in journal[len(sizes) :]]

    assert asyncio.run(main()) == [("t", 5), ("t", MAX_HELD), ("t", 5)]


def test_a_transport_closed_meanwhile_gets_nothing_and_a_failing_one_costs_the_others_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> tuple[list[tuple[str, bytes]], Transport]:
        journal: list[tuple[str, bytes]] = []
        gone, broken, fine = (
            Transport("gone", journal),
            Transport("broken", journal, fails=True),
            Transport("fine", journal),
        )
        writes = WriteBatch.of(asyncio.get_running_loop())
        writes.later(gone, b"a cancelled call's request")
        writes.later(broken, b"reply")
        writes.later(fine, b"reply")
        gone.abort()  # the call was cancelled and its connection dropped before the turn ended
        await _next_turn()
        return journal, broken

    with caplog.at_level(logging.ERROR, logger="unigate"):
        journal, broken = asyncio.run(main())
    assert journal == [("fine", b"reply")]
    assert broken.aborted
    assert "a held write failed" in caplog.text


def test_one_batch_per_loop() -> None:
    async def batch() -> WriteBatch:
        return WriteBatch.of(asyncio.get_running_loop())

    async def both() -> tuple[WriteBatch, WriteBatch]:
        return await batch(), await batch()

    first, second = asyncio.run(both())
    assert first is second  # the server's connections and the upstream client's share it
    assert asyncio.run(batch()) is not first  # another loop, another batch


def test_a_loop_that_takes_no_attributes_still_gets_its_writes_made() -> None:
    class Slotted:
        __slots__ = ("soon",)

        def __init__(self) -> None:
            self.soon: list[object] = []

        def call_soon(self, callback: object) -> None:
            self.soon.append(callback)

    loop = Slotted()
    writes = WriteBatch.of(loop)  # type: ignore[arg-type]
    assert WriteBatch.of(loop) is not writes  # type: ignore[arg-type]  # nowhere to keep it
    journal: list[tuple[str, bytes]] = []
    writes.later(Transport("t", journal), b"data")
    (flush,) = loop.soon
    flush()  # type: ignore[operator]
    assert journal == [("t", b"data")]


def test_a_write_is_made_at_once_while_fewer_than_two_requests_are_under_way() -> None:
    async def main() -> list[list[tuple[str, bytes]]]:
        journal: list[tuple[str, bytes]] = []
        t = Transport("t", journal)
        writes = WriteBatch.of(asyncio.get_running_loop())
        in_flight: set[int] = {1}
        writes.in_flight = in_flight  # the server's task set
        seen = []
        writes.later(t, b"the only request's reply")  # nothing to share the turn with
        seen.append(list(journal))
        in_flight.add(2)
        writes.later(t, b"one of two")  # held
        seen.append(list(journal))
        in_flight.discard(2)
        writes.later(t, b"alone again")  # at once, after what was held
        seen.append(list(journal))
        return seen

    first, second, third = asyncio.run(main())
    assert first == [("t", b"the only request's reply")]
    assert second == first
    assert third == [*first, ("t", b"one of two"), ("t", b"alone again")]
