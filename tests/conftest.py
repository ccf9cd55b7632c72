"""Shared fixtures: fake upstreams and gateways (served in-process, or real `unigate serve`
processes for the tests marked `process`), all on 127.0.0.1; the run order options."""

from __future__ import annotations

import gc
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import gc_baseline, markers
from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess
from tests.support.served import ServedGateway


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--order",
        default="file",
        help="test order: file (as collected), reverse, or random[:SEED] (files, then the tests "
        "within each file, shuffled): no test may depend on another having run",
    )


# Worker processes for `-n auto` (pyproject.toml's addopts): the suite's files spread over four
# (most of its time is spent waiting on timers, so more workers than the machine's two cores
# still pay); none when tests are named on the command line (a file or a test run alone starts
# at once, and `-s` and `--pdb` behave as usual). PYTEST_XDIST_AUTO_NUM_WORKERS overrides both.
WORKERS = 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own reading of it
    return 0 if config.args_source == pytest.Config.ArgsSource.ARGS else WORKERS


def pytest_configure(config: pytest.Config) -> None:
    gc_baseline.keep_the_app_from_freezing()
    # A random order is drawn once, in the controlling process, and handed to the workers
    # (pytest_configure_node): every worker must collect the tests in the same order.
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.option.order = workerinput.get("order", config.option.order)
    elif config.option.order == "random":
        config.option.order = f"random:{random.randrange(10**6)}"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None  # xdist's own
    from tests.support.schedule import LongestFilesFirst

    return LongestFilesFirst(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["order"] = node.config.option.order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order = str(config.getoption("--order"))
    if order == "file":
        return
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.location[0], []).append(item)
    groups = list(by_file.values())
    if order == "reverse":
        groups = [group[::-1] for group in groups[::-1]]
    elif order.startswith("random:"):
        seed = order.partition(":")[2]
        rng = random.Random(seed)
        rng.shuffle(groups)
        for group in groups:
            rng.shuffle(group)
        config.stash[_SEED] = seed
    else:
        raise pytest.UsageError(f"--order={order}: use file, reverse or random[:SEED]")
    items[:] = [item for group in groups for item in group]


_SEED = pytest.StashKey[str]()


def pytest_collection_finish(session: pytest.Session) -> None:
    # Before the first test: later collections walk only what the tests made (gc_baseline.py).
    gc_baseline.freeze_what_collection_left()


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.stash.get(_SEED, None)
    return f"test order: random:{seed}" if seed else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the test's fixtures: a module-scoped gateway starts in its first test's setup.
    markers.running({mark.name for mark in item.iter_markers()})


@pytest.fixture(scope="module", autouse=True)
def _collect_at_module_end() -> Iterator[None]:
    """A full collection when a test file ends: what it left unclosed (a socket, an event loop)
    is reported as a ResourceWarning in its own last test, not in whichever file the same
    worker runs next."""
    yield
    gc.collect()


@pytest.fixture(scope="session", autouse=True)
def _remove_limit_semaphores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The named semaphores of the limit tables this session's tests made (a serve removes its
    own at its next start; a test's would stay in /dev/shm)."""
    yield
    from unigate.limits.shared_table import SharedTable

    for table in tmp_path_factory.getbasetemp().rglob("*.bin"):
        SharedTable.remove(table)


@pytest.fixture(autouse=True)
def _close_sdk_clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Closes the synchronous SDK clients (openai, anthropic, google-genai) a test made, when
    it ends.

    Tests make them inline and let them go; each holds a pool of keep-alive connections. The
    SDKs close theirs when collected, but one caught in a reference cycle (an exception's
    traceback is enough) is collected by the cyclic GC, which may finalize its sockets first:
    an unclosed-socket ResourceWarning in whatever test runs then. (Clients a module-scoped
    fixture makes exist before this fixture does: they live, and are released, with it.)"""
    import anthropic
    import openai
    from google import genai

    made: list[Any] = []
    for cls in (openai.OpenAI, anthropic.Anthropic, genai.Client):
        original = cls.__init__

        def init(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> None:
            __original(self, *args, **kwargs)
            made.append(self)

        monkeypatch.setattr(cls, "__init__", init)
    yield
    for client in made:
        client.close()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Callable[..., ServedGateway]]:
    """Gateways served in-process, sharing the test's folder (so its data dir: a second one
    started after the first stopped finds what the first stored)."""
    started: list[ServedGateway] = []

    def make(config: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> ServedGateway:
        gw = ServedGateway(tmp_path, config=config, env=env).start()
        started.append(gw)
        return gw

    yield make
    for gw in started:
        gw.stop()


@pytest.fixture
def process_factory(tmp_path: Path) -> Iterator[Callable[..., GatewayProcess]]:
    """Real `unigate serve` processes (tests marked `process`), sharing the test's folder."""
    started: list[GatewayProcess] = []

    def make(
        config: dict[str, Any] | None = None, env: dict[str, str] | None = None, workers: int = 1
    ) -> GatewayProcess:
        gw = GatewayProcess(tmp_path, config=config, env=env, workers=workers).start()
        started.append(gw)
        return gw

    yield make
    for gw in started:
        gw.stop()


@pytest.fixture(scope="module")
def sandbox_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """One default-config gateway (sandbox provider) shared by a test module."""
    with ServedGateway(tmp_path_factory.mktemp("sandbox")) as gw:
        yield gw


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    from tests.support.postgres import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.services)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store test runs on both backends; Postgres gets a fresh schema per test."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    base: str = request.getfixturevalue("postgres_url")
    return _fresh_postgres_database(base, request.node.name)


def _fresh_postgres_database(base: str, test_name: str) -> str:
    import re

    from tests.support.postgres import fresh_database

    return fresh_database(base, "t_" + re.sub(r"[^a-z0-9]+", "_", test_name.lower())[:50])
