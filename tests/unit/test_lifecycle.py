"""Start-up and shutdown unwind cleanly: when a step fails part-way, what started is stopped,
in reverse order, with one log line naming the step, the cause and what was stopped; a
shutdown step that fails does not keep the others from stopping. Run on the gateway's own
steps, failing each in turn."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from unigate.gateway import Gateway
from unigate.lifecycle import Lifecycle, Step
from unigate.settings import Settings

log = logging.getLogger("unigate.test_lifecycle")


class Boom(RuntimeError):
    pass


def _recorded(steps: list[Step], fail_at: str | None, calls: list[str]) -> list[Step]:
    """`steps` doing their real work, each start and stop noted in `calls`; `fail_at`'s start
    raises instead."""

    def starter(step: Step) -> Step:
        async def start() -> None:
            if step.name == fail_at:
                raise Boom(f"{step.name} cannot start")
            calls.append(f"start {step.name}")
            if step.start is not None:
                await step.start()

        async def stop() -> None:
            calls.append(f"stop {step.name}")
            if step.stop is not None:
                await step.stop()

        return Step(step.name, start, stop)

    return [starter(step) for step in steps]


def _gateway(tmp_path: Path) -> Gateway:
    return Gateway.build(Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path), "UNIGATE_ADMIN_KEY": "uga_t"}))


def test_the_gateways_steps_are_stopped_in_the_reverse_of_their_start(tmp_path: Path) -> None:
    calls: list[str] = []

    async def main() -> None:
        gw = _gateway(tmp_path)
        steps = _recorded(gw.steps(), None, calls)
        gw.steps = lambda: steps  # type: ignore[method-assign]
        await gw.start()
        await gw.stop()

    asyncio.run(main())
    starts = [c.removeprefix("start ") for c in calls if c.startswith("start ")]
    stops = [c.removeprefix("stop ") for c in calls if c.startswith("stop ")]
    assert stops == starts[::-1] and stops[0] == "usage recorder" and "database" in stops


def test_a_start_up_that_fails_at_any_step_stops_what_started(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="unigate")
    built = _gateway(tmp_path / "names")
    names = [step.name for step in built.steps()]
    asyncio.run(built.stop())  # never started: what `build` made is closed
    assert len(names) >= 13
    for index, failing in enumerate(names):
        calls: list[str] = []
        caplog.clear()

        async def main(failing: str, calls: list[str], where: Path) -> None:
            gw = _gateway(where)
            steps = _recorded(gw.steps(), failing, calls)
            gw.steps = lambda: steps  # type: ignore[method-assign]
            with pytest.raises(Boom):
                await gw.start()
            calls.append("after start")
            await gw.stop()  # nothing is left to stop: the failed start unwound it all

        asyncio.run(main(failing, calls, tmp_path / str(index)))
        before = names[:index]
        assert calls == [
            *(f"start {name}" for name in before),
            *(f"stop {name}" for name in reversed(before)),
            "after start",
        ], failing
        lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        undone = ", ".join(reversed(before)) if before else "nothing"
        assert lines == [
            f"start-up failed at {failing} (Boom: {failing} cannot start); stopped {undone}, in reverse order"
        ], failing


def test_a_step_that_cannot_stop_does_not_keep_the_others_running(caplog: pytest.LogCaptureFixture) -> None:
    stopped: list[str] = []

    def step(name: str, fails: bool = False) -> Step:
        async def start() -> None:
            return None

        async def stop() -> None:
            if fails:
                raise Boom("stuck")
            stopped.append(name)

        return Step(name, start, stop)

    async def main() -> None:
        life = Lifecycle([step("a"), step("b", fails=True), step("c")], log)
        await life.start()
        await life.stop()
        await life.stop()  # a second stop has nothing left to stop

    caplog.set_level(logging.ERROR, logger=log.name)
    asyncio.run(main())
    assert stopped == ["c", "a"]
    assert [r.getMessage() for r in caplog.records] == [
        "shutdown: b (Boom: stuck) failed to stop; the other steps stopped"
    ]


def test_unwinding_names_a_step_that_could_not_stop(caplog: pytest.LogCaptureFixture) -> None:
    async def fine() -> None:
        return None

    async def stuck() -> None:
        raise Boom("stuck")

    async def broken() -> None:
        raise Boom("no")

    async def main() -> None:
        life = Lifecycle([Step("a", fine, fine), Step("b", fine, stuck), Step("c", broken, fine)], log)
        with pytest.raises(Boom):
            await life.start()

    caplog.set_level(logging.ERROR, logger=log.name)
    asyncio.run(main())
    assert [r.getMessage() for r in caplog.records] == [
        "start-up failed at c (Boom: no); stopped a, in reverse order; b (Boom: stuck) failed to stop"
    ]
