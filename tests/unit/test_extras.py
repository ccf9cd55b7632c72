"""PostgreSQL's driver, the Redis client, the OpenTelemetry SDK and the S3 client are extras
(src/unigate/extras.py): a default install leaves them out, and a setting that needs a missing
one stops the start with one line naming the package and the install command, from the CLI's
checks and from the pieces the app builds alike. The packages are installed here; a test marks
one as missing by pointing its entry at a module that does not exist.
tests/e2e/test_core_alone.py checks the same lines in a virtualenv that really lacks them."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from unigate.cli.startup import StartupError, check_database_url, check_redis, check_storage, check_tracing
from unigate.config import StorageConfig
from unigate.extras import EXTRAS, MissingExtra, installed, require
from unigate.settings import Settings
from unigate.storage import build_storage
from unigate.store import db
from unigate.store.redis import connect

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
OPTIONAL = PYPROJECT["project"]["optional-dependencies"]
S3 = StorageConfig(backend="s3", bucket="bucket", endpoint_url="http://127.0.0.1:9", region="us-east-1")


def _missing(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    # A dotted name whose parent is missing too, as the OpenTelemetry exporter's would be.
    monkeypatch.setitem(EXTRAS, extra, EXTRAS[extra]._replace(module="unigate_absent.module"))


def _names(requirements: list[str]) -> set[str]:
    return {r.split(">")[0].split("[")[0].split(";")[0].strip() for r in requirements}


def test_each_extra_is_pyprojects_and_production_takes_them_all() -> None:
    for name, extra in EXTRAS.items():
        assert extra.package in _names(OPTIONAL[name]), name
        assert extra.package not in _names(PYPROJECT["project"]["dependencies"]), name
        assert installed(name), f"the test environment installs every extra: {name}"
    assert OPTIONAL["production"] == [f"unigate[{','.join(EXTRAS)}]"]
    assert "unigate[production]" in OPTIONAL["test"]


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_a_missing_package_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch, extra: str
) -> None:
    require(extra)  # installed: nothing to say
    _missing(monkeypatch, extra)
    assert not installed(extra)
    with pytest.raises(MissingExtra) as refused:
        require(extra)
    message = str(refused.value)
    assert message.startswith(f"{EXTRAS[extra].wanted_by} needs the {EXTRAS[extra].package} package")
    assert f"pip install 'unigate[{extra}]'" in message
    assert "requirements/production.txt" in message


CLI_CHECKS: dict[str, Callable[[], None]] = {
    "postgres": lambda: check_database_url("postgresql://u:secret@127.0.0.1:9/db"),
    "redis": lambda: check_redis("redis://:secret@127.0.0.1:9/0"),
    "otel": lambda: check_tracing(Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})),
    "s3": lambda: check_storage(S3, Path("/nonexistent")),
}


@pytest.mark.parametrize("extra", list(EXTRAS))
def test_the_start_up_check_is_one_line_without_the_url(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    _missing(monkeypatch, extra)
    with pytest.raises(StartupError) as refused:
        CLI_CHECKS[extra]()
    assert f"pip install 'unigate[{extra}]'" in str(refused.value)
    assert "\n" not in str(refused.value) and "secret" not in str(refused.value)


def test_sqlite_and_an_unset_redis_or_tracing_need_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for extra in EXTRAS:
        _missing(monkeypatch, extra)
    check_database_url("sqlite:///x.db")
    check_redis(None)
    check_tracing(Settings.from_env({}))
    check_storage(StorageConfig(), Path("/nonexistent"))


def test_what_the_app_builds_refuses_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Served by another ASGI server (`uvicorn unigate.app:create_app`), no CLI check runs
    first: the engine, the Redis client, the tracer and the S3 store say it themselves."""
    from unigate.observability.tracing import Tracing

    builds: dict[str, Callable[[], object]] = {
        "postgres": lambda: db.create_engine("postgresql://u:p@127.0.0.1:9/db"),
        "redis": lambda: connect("redis://127.0.0.1:9/0"),
        "otel": lambda: Tracing("http://127.0.0.1:9/v1/traces", "unigate"),
        "s3": lambda: build_storage(S3, Path("/nonexistent")),
    }
    for extra, build in builds.items():
        with monkeypatch.context() as patch:
            _missing(patch, extra)
            with pytest.raises(MissingExtra, match=rf"pip install 'unigate\[{extra}\]'"):
                build()


def test_an_installed_extra_still_builds() -> None:
    engine = db.create_engine("postgresql://u:p@127.0.0.1:9/db")
    asyncio.run(engine.dispose())
    asyncio.run(connect("redis://127.0.0.1:9/0").aclose())
