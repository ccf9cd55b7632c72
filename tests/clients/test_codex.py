"""The OpenAI Codex CLI (the pinned `@openai/codex`, its native binary) pointed at the gateway as a
custom model provider in its config.toml (`base_url` = the gateway's `/v1`, `env_key`,
`wire_api = "responses"`), default settings otherwise (its web search tool included), and its
documented switches that keep it off the network. One `codex exec` turn runs a shell command
with its `exec_command` tool and answers; the secret reaches the answer only through the
command's output.

Upstreams: the sandbox and the chat-only, Anthropic and Gemini fakes (the Responses request
translated), and an OpenAI fake serving /v1/responses itself (`responses: native`, relayed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.rig import (
    NATIVE_RESPONSES,
    NODE_BIN,
    SANDBOX,
    SETUP_HINT,
    TRANSLATED,
    Rig,
    Workdir,
    clean_env,
    run_client,
)

pytestmark = pytest.mark.clients

CODEX = NODE_BIN / "codex"
KEY_VARIABLE = "UNIGATE_API_KEY"


def codex_home(rig: Rig, workdir: Workdir, model: str) -> Path:
    home = workdir.home / ".codex"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "unigate"\n'
        # Off the network: no update check, analytics, feedback uploads, or plugin
        # marketplace sync (which fetches from GitHub).
        "check_for_update_on_startup = false\n"
        "\n"
        "[model_providers.unigate]\n"
        'name = "unigate"\n'
        f'base_url = "{rig.base_url}/v1"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        'wire_api = "responses"\n'
        "\n"
        "[analytics]\nenabled = false\n\n"
        "[feedback]\nenabled = false\n\n"
        "[features]\nplugins = false\n"
    )
    return home


def prompt(workdir: Workdir) -> str:
    # The sandbox calls the tool the prompt names and builds every argument of its schema from
    # the prompt's words: the ones whose made-up values would break the command are stated.
    return (
        f'Run exec_command with cmd "cat notes.txt", shell "bash", workdir "{workdir.path}", '
        "max_output_tokens 2000 and yield_time_ms 5000, then tell me the secret word."
    )


@pytest.mark.parametrize("model", [*TRANSLATED, NATIVE_RESPONSES])
def test_codex_runs_a_command_and_answers(rig: Rig, workdir: Workdir, model: str) -> None:
    assert CODEX.exists(), SETUP_HINT
    home = codex_home(rig, workdir, model)
    env = clean_env(workdir.home, CODEX_HOME=str(home), **{KEY_VARIABLE: rig.key})
    last = workdir.home / "last-message.txt"
    since = rig.mark()
    with rig.scripted("exec_command", {"cmd": "cat notes.txt"}):
        proc = run_client(
            [str(CODEX), "exec", "--output-last-message", str(last), prompt(workdir)], env, workdir.path
        )
    assert proc.returncode == 0, f"codex exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    answer = last.read_text()
    assert workdir.secret in answer, answer  # only the file, read by the command, holds it
    if model == SANDBOX:
        assert "The tool exec_command returned" in answer  # the sandbox quotes the result it received
    else:
        results = rig.tool_results(model, since)
        assert any(workdir.secret in r for r in results), results
