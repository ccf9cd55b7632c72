"""The configuration `unigate serve` loads before forking its workers (`LoadedConfig`): a worker
takes it only while the file and the environment still hold what it was loaded from, so a
worker started after the file changed (one replacing a worker that died) serves the file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from unigate.app import app_factory
from unigate.config_source import LoadedConfig

CONFIG = """
providers:
  - {name: up, protocol: openai, base_url: "http://${UP_HOST}/v1"}
models:
  - {name: first, routes: [{provider: up}]}
"""


def _file(tmp_path: Path, text: str = CONFIG) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_current_while_the_file_and_environment_are_unchanged(tmp_path: Path) -> None:
    path = _file(tmp_path)
    env = {"UP_HOST": "127.0.0.1:9"}
    loaded = LoadedConfig.load(path, env)
    assert loaded.config.providers[0].base_url == "http://127.0.0.1:9/v1"
    assert loaded.current(path, dict(env)) is loaded.config
    path.write_text(CONFIG)  # rewritten with the same bytes: still current
    assert loaded.current(path, env) is loaded.config


def test_not_current_once_anything_it_came_from_changed(tmp_path: Path) -> None:
    path = _file(tmp_path)
    env = {"UP_HOST": "127.0.0.1:9"}
    loaded = LoadedConfig.load(path, env)
    assert loaded.current(path, {"UP_HOST": "127.0.0.1:10"}) is None  # another interpolated value
    assert loaded.current(path, {**env, "OTHER": "x"}) is None
    assert loaded.current(tmp_path / "other.yaml", env) is None
    assert loaded.current(None, env) is None
    path.write_text(CONFIG.replace("first", "second"))
    assert loaded.current(path, env) is None
    path.unlink()
    assert loaded.current(path, env) is None  # unreadable: the worker reports it itself


def test_without_a_file_current_for_the_same_environment(tmp_path: Path) -> None:
    env = {"UNIGATE_DATA_DIR": str(tmp_path)}
    loaded = LoadedConfig.load(None, env)
    assert loaded.text is None
    assert loaded.current(None, env) is loaded.config
    assert loaded.current(None, {**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) is None


def test_a_worker_takes_it_while_current_and_reads_the_file_once_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path)
    monkeypatch.setenv("UNIGATE_CONFIG", str(path))
    monkeypatch.setenv("UNIGATE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("UP_HOST", "127.0.0.1:9")
    loaded = LoadedConfig.load(path)
    assert app_factory(loaded).gateway.config is loaded.config
    path.write_text(CONFIG.replace("first", "second"))
    config = app_factory(loaded).gateway.config
    assert [model.name for model in config.models] == ["second"]
    assert [model.name for model in app_factory().gateway.config.models] == ["second"]


def test_the_server_process_loads_it_with_every_configured_adapter(tmp_path: Path) -> None:
    """Before forking, the server process loads the config and imports the adapters it names,
    a plugin's (the sandbox's, on the defaults) as well as the built-in ones, so the workers
    share their pages instead of each importing its own copy."""
    code = (
        "import sys\n"
        "from unigate.cli.launch import _load_config\n"
        "loaded = _load_config()\n"
        "print(loaded is not None, 'unigate_sandbox.provider' in sys.modules)\n"
    )
    env = {**os.environ, "UNIGATE_DATA_DIR": str(tmp_path)}
    env.pop("UNIGATE_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_its_repr_shows_no_credential(tmp_path: Path) -> None:
    path = _file(tmp_path, CONFIG.replace('/v1"}', '/v1", api_key: "${UP_CREDENTIAL}"}'))
    loaded = LoadedConfig.load(path, {"UP_HOST": "127.0.0.1:9", "UP_CREDENTIAL": "never-shown"})
    assert loaded.config.providers[0].api_key is not None
    assert "never-shown" not in repr(loaded) and "UP_CREDENTIAL" not in repr(loaded)
