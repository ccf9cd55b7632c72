"""Shared fixtures: fake upstreams and real gateway processes, all on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Callable[..., GatewayProcess]]:
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
def sandbox_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One default-config gateway (sandbox provider) shared by a test module."""
    with GatewayProcess(tmp_path_factory.mktemp("sandbox")) as gw:
        yield gw


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    from tests.support.postgres import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
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
