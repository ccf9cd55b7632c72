"""The gateway installed alone, as a production image in front of real vendors is: a fresh
virtualenv with the runtime lock and `pip install --no-deps .`, no sandbox and none of the
optional features' packages (PostgreSQL, Redis, OpenTelemetry, S3: src/unigate/extras.py). It
serves a configured upstream, and says in one line what to do when it has no provider at all,
when a config enables the sandbox it does not have, or when a setting needs a package it lacks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.gateway import GatewayProcess
from tests.support.net import free_port

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[2]
INSTALL_SANDBOX = "pip install 'unigate[sandbox]'"


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv's interpreter with the gateway alone installed in it."""
    root = tmp_path_factory.mktemp("core-alone")
    source = root / "source"  # a copy: building in the repository would leave build/ there
    (source / "src").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "src" / "unigate", source / "src" / "unigate", ignore=shutil.ignore_patterns("__pycache__")
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    interpreter = venv / "bin" / "python"
    pip = [str(interpreter), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    lock = REPO / "requirements" / "runtime.txt"
    subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True, timeout=900)
    subprocess.run([*pip, "--no-deps", str(source)], check=True, timeout=300)
    return interpreter


def _serve(
    python: Path, workdir: Path, *args: str, env: dict[str, str] | None = None, command: str = "serve"
) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [str(python), "-m", "unigate", command, *args],
        env={**inherited, "UNIGATE_DATA_DIR": str(workdir / "data"), **(env or {})},
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_sandbox_is_not_installed(python: Path) -> None:
    found = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('unigate_sandbox'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "None"


def test_no_optional_package_is_installed(python: Path) -> None:
    modules = ("asyncpg", "redis", "opentelemetry", "obstore")
    code = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    found = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


UPSTREAM = (
    "providers: [{name: up, protocol: openai, base_url: 'http://127.0.0.1:9'}]\n"
    "models: [{name: m, routes: [{provider: up}]}]\n"
)
NEEDS = {
    "postgres": ({"UNIGATE_DATABASE_URL": "postgresql://u:secret@127.0.0.1:9/db"}, ""),
    "redis": ({"UNIGATE_REDIS_URL": "redis://:secret@127.0.0.1:9/0"}, ""),
    "otel": ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, ""),
    "s3": ({}, "storage: {backend: s3, bucket: files, endpoint_url: 'http://127.0.0.1:9'}\n"),
}


@pytest.mark.parametrize("extra", list(NEEDS))
def test_a_setting_that_needs_a_missing_package_is_one_error_line(
    python: Path, tmp_path: Path, extra: str
) -> None:
    env, storage = NEEDS[extra]
    config = tmp_path / "gateway.yaml"
    config.write_text(UPSTREAM + storage)
    proc = _serve(python, tmp_path, "--config", str(config), "--port", str(free_port()), env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert f"pip install 'unigate[{extra}]'" in lines[0] and "secret" not in lines[0]


def test_migrate_on_postgresql_without_its_driver_is_one_error_line(python: Path, tmp_path: Path) -> None:
    env = {"UNIGATE_DATABASE_URL": "postgresql://u:secret@127.0.0.1:9/db"}
    proc = _serve(python, tmp_path, env=env, command="migrate")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "error: a postgresql:// UNIGATE_DATABASE_URL needs the asyncpg package, which is not installed: "
        "pip install 'unigate[postgres]', or every optional package pinned by hash: "
        "pip install --require-hashes -r requirements/production.txt"
    )


def test_it_serves_a_configured_upstream(python: Path, tmp_path: Path) -> None:
    # The server runs under the fresh venv's interpreter in place of this one.
    under_venv = ["sh", "-c", f'shift; exec "{python}" "$@"', "sh"]
    with FakeOpenAI() as fake:
        config = {
            "providers": [{"name": "up", "protocol": "openai", "base_url": fake.base_url}],
            "models": [{"name": "gpt-4o-mini", "routes": [{"provider": "up"}]}],
        }
        with GatewayProcess(tmp_path, config=config, prefix=under_venv) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == fake.reply_text
            listed = [m.id for m in client.models.list()]
            assert listed == ["gpt-4o-mini"]
        assert fake.received[-1].body["model"] == "gpt-4o-mini"


def test_without_a_config_it_says_what_to_install(python: Path, tmp_path: Path) -> None:
    proc = _serve(python, tmp_path, "--port", str(free_port()))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no providers"), proc.stderr
    assert INSTALL_SANDBOX in lines[0] and "--config" in lines[0]


def test_sandbox_enabled_without_the_sandbox_is_one_error_line(python: Path, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "providers: [{name: up, protocol: openai, base_url: 'http://127.0.0.1:9'}]\n"
        "models: [{name: m, routes: [{provider: up}]}]\n"
        "sandbox: {enabled: true}\n"
    )
    proc = _serve(python, tmp_path, "--config", str(config))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: config file {config}: sandbox.enabled: the sandbox is not installed")
    assert INSTALL_SANDBOX in lines[0]


@pytest.fixture(scope="module")
def from_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv's interpreter with the gateway and the sandbox installed from the wheels
    `scripts/build.sh` makes, pinned by the sandbox lock, as the README's install section says."""
    root = tmp_path_factory.mktemp("wheels")
    dist = root / "dist"
    subprocess.run(["bash", str(REPO / "scripts" / "build.sh"), str(dist)], check=True, timeout=300)
    wheels = sorted(str(w) for w in dist.glob("*.whl"))
    assert [Path(w).name.split("-")[0] for w in wheels] == ["unigate", "unigate_sandbox"], wheels
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    interpreter = venv / "bin" / "python"
    pip = [str(interpreter), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    lock = REPO / "requirements" / "sandbox.txt"
    subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True, timeout=900)
    subprocess.run([*pip, "--no-deps", *wheels], check=True, timeout=300)
    return interpreter


# Its fixture builds the wheels (compiling the per-request path: about a minute alone) and
# installs them with the sandbox lock: 100 s on a quiet machine, past the suite's 120 s default
# beside the other tests of the parallel run.
@pytest.mark.timeout(600)
def test_the_wheels_install_and_serve_the_sandbox(from_wheels: Path, tmp_path: Path) -> None:
    under_venv = ["sh", "-c", f'shift; exec "{from_wheels}" "$@"', "sh"]
    code = (
        "import unigate, unigate_sandbox, unigate.app as a;"
        "print(unigate.__file__, a.__file__, unigate.COMPILED_PROBLEM)"
    )
    installed = subprocess.run([str(from_wheels), "-c", code], capture_output=True, text=True, check=True)
    package, app, problem = installed.stdout.split(maxsplit=2)
    assert str(REPO) not in package, "imported from the repository, not the wheel"
    # The wheel carries the per-request path compiled (scripts/build.sh, setup.py): in use.
    assert problem.strip() == "None" and app.endswith(EXTENSION_SUFFIXES[0]), installed.stdout
    with GatewayProcess(tmp_path, prefix=under_venv) as gw:
        client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=gw.create_key(), max_retries=0)
        reply = client.chat.completions.create(
            model="sandbox-chat", messages=[{"role": "user", "content": "Hello there"}]
        )
        assert reply.choices[0].message.content
        assert "sandbox-image" in {m.id for m in client.models.list()}
