"""A start that would serve nothing, or run without the Redis it was given, says so: one warning
line naming the cause and the fix, or one start-up error line where it cannot work at all."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support.net import free_port
from unigate.cli.serve import _check_config
from unigate.cli.startup import StartupError, check_redis
from unigate.settings import Settings


def _settings(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    return Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path / "data"), "UNIGATE_CONFIG": str(path)})


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("text", ["", "providers: []\nmodels: []\n", "routing: {cooldown_seconds: 5}\n"])
def test_a_config_without_models_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    _check_config(_settings(tmp_path, text))
    warned = _warnings(caplog)
    assert len(warned) == 1, warned
    assert "defines no models" in warned[0] and "every model call gets 404" in warned[0]
    assert str(tmp_path / "gw.yaml") in warned[0] and "sandbox: {enabled: true}" in warned[0]


def test_a_config_with_models_does_not_warn(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    _check_config(_settings(tmp_path, "sandbox: {enabled: true}\n"))
    assert not _warnings(caplog)


def test_an_unreachable_redis_warns_and_starts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="unigate")
    url = f"redis://:s3cret-pass@127.0.0.1:{free_port()}/0"
    check_redis(url)
    warned = _warnings(caplog)
    assert len(warned) == 1 and "does not answer" in warned[0] and "limits use" in warned[0], warned
    assert "s3cret-pass" not in warned[0] and ":***@127.0.0.1" in warned[0]


def test_a_malformed_redis_url_is_one_start_up_line() -> None:
    with pytest.raises(StartupError) as info:
        check_redis("localhost:6379")
    message = str(info.value)
    assert message.startswith("UNIGATE_REDIS_URL localhost:6379 is not a Redis URL")
    assert "redis://host:6379/0" in message and "\n" not in message
