"""The leave watch remembers the loop it last ran under (a dict lookup instead of a getpid
call per request): a call under another loop, in turn or in another thread at the same time,
still registers its own task."""

from __future__ import annotations

import asyncio
import threading

from unigate.edge.asgi import Message
from unigate.edge.client_gone import LeaveWatch


async def _never() -> Message:
    await asyncio.Event().wait()
    return {"type": "http.disconnect"}


async def _enter_and_exit(watch: LeaveWatch) -> bool:
    task = watch.enter(_never)
    try:
        return task is asyncio.current_task()
    finally:
        watch.exit(task)


def test_each_loop_in_turn_registers_its_own_task() -> None:
    watch = LeaveWatch()
    assert all(asyncio.run(_enter_and_exit(watch)) for _ in range(3))


def test_a_loop_in_another_thread_registers_its_own_task_while_the_first_runs() -> None:
    watch = LeaveWatch()
    results: list[bool] = []

    async def main() -> None:
        assert await _enter_and_exit(watch)  # the watch now remembers this loop
        holder = watch.enter(_never)  # and this loop is stepping a task while the thread runs
        try:
            thread = threading.Thread(target=lambda: results.append(asyncio.run(_enter_and_exit(watch))))
            thread.start()
            thread.join()
        finally:
            watch.exit(holder)

    asyncio.run(main())
    assert results == [True]
