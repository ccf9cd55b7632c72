"""Gemini CLI (the pinned `@google/gemini-cli`) pointed at the gateway as its configuration
reference says for a custom endpoint: `GOOGLE_GEMINI_BASE_URL` = the gateway's root, the gateway
key in `GEMINI_API_KEY`, API-key authentication selected in its settings, `-m` a gateway model
id, default settings otherwise, and its documented switches that keep it off the network. One
`gemini -p` turn reads a file with its `read_file` tool and answers (a streamed
`streamGenerateContent` call, then another carrying the tool's result); the secret in the file
reaches the answer only through that result. Another searches the web with its
`google_web_search` tool, which is a call of its own on a model id of its own choosing
(`gemini-3-flash-preview` with the `googleSearch` tool), answered by the gateway's glob model
`gemini-*` (routed to the sandbox, which searches offline): the pages found reach the answer with
the citation marks the CLI places by the grounding's byte offsets.

Why the settings file: with `GOOGLE_GEMINI_BASE_URL` set and no authentication selected, this
version picks a "gateway" method that its own headless check then refuses ("Invalid auth method
selected."); `security.auth.selectedType: "gemini-api-key"` is the API-key method its reference
documents the variable for.

Upstreams: the Gemini fake (same format, relayed), and the sandbox and the chat-only and
Anthropic fakes (the Gemini request translated)."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from tests.clients.rig import NODE_BIN, SANDBOX, SETUP_HINT, TRANSLATED, Rig, Workdir, clean_env, run_client

pytestmark = pytest.mark.clients

GEMINI = NODE_BIN / "gemini"
ACCESS = "unigate.access: "


def gemini_env(rig: Rig, workdir: Workdir, key: str) -> dict[str, str]:
    settings = workdir.home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                # Off the network: no update check, no usage statistics sent to Google.
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
            }
        )
    )
    return clean_env(
        workdir.home,
        GOOGLE_GEMINI_BASE_URL=rig.base_url,
        GEMINI_API_KEY=key,
        # Headless runs refuse a folder the user has not trusted; this is its documented switch
        # for automated environments.
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )


def access_lines(rig: Rig, key_id: str, at_least: int) -> list[str]:
    """The gateway's access lines of the calls made with the key `key_id`, once `at_least` are
    there (lines are written in batches, a few milliseconds after their responses, and other
    tests' calls share the log)."""
    deadline = time.monotonic() + 5
    mine = f" key={key_id} "
    while True:
        text = rig.gateway.log()
        lines = [line.split(ACCESS, 1)[1] for line in text.splitlines() if ACCESS in line and mine in line]
        if len(lines) >= at_least or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def read_prompt(workdir: Workdir) -> str:
    # The sandbox picks the tool the prompt names and builds its arguments from the prompt's
    # words: the path is stated, since read_file refuses one outside the project.
    return f'Use read_file with file_path "{workdir.notes}" and tell me the secret word in it.'


def run_gemini(
    rig: Rig, workdir: Workdir, model: str | None, prompt: str, tool: str, arguments: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """One headless turn (`-m model`, or its default model for None) in which every fake calls
    `tool`: the finished client, and the gateway's access lines of the calls the turn made (at
    least the two a tool round trip takes)."""
    assert GEMINI.exists(), SETUP_HINT
    key = rig.gateway.create_key_record()  # the run's own, to tell its calls in the log
    env = gemini_env(rig, workdir, str(key["key"]))
    with rig.scripted(tool, arguments):
        argv = [str(GEMINI), "-p", prompt, *(["-m", model] if model else [])]
        proc = run_client(argv, env, workdir.path)
    assert proc.returncode == 0, f"gemini exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    calls = access_lines(rig, str(key["id"]), at_least=2)
    assert len(calls) >= 2, calls
    return proc, calls


@pytest.mark.parametrize("model", TRANSLATED)
def test_gemini_cli_reads_a_file_and_answers(rig: Rig, workdir: Workdir, model: str) -> None:
    since = rig.mark()
    proc, calls = run_gemini(
        rig, workdir, model, read_prompt(workdir), "read_file", {"file_path": str(workdir.notes)}
    )
    answer = proc.stdout
    # Every call it made was one the gateway answered: the two turns, streamed.
    assert all(c.startswith(f"POST /v1beta/models/{model}:streamGenerateContent 200 ") for c in calls), calls
    assert workdir.secret in answer, answer  # only the file, read by the tool, holds it
    if model == SANDBOX:
        assert "The tool read_file returned" in answer  # the sandbox quotes the result it received
    else:
        results = rig.tool_results(model, since)
        assert any(workdir.secret in r for r in results), results


@pytest.mark.parametrize("model", TRANSLATED)
def test_gemini_cli_searches_the_web(rig: Rig, workdir: Workdir, model: str) -> None:
    query = f"weather in {workdir.secret}"
    proc, calls = run_gemini(
        rig,
        workdir,
        model,
        f'Use google_web_search with query "{query}" and summarise what it found.',
        "google_web_search",
        {"query": query},
    )
    answer = proc.stdout
    turns = [c for c in calls if c.startswith(f"POST /v1beta/models/{model}:streamGenerateContent 200 ")]
    search = [
        c for c in calls if c.startswith("POST /v1beta/models/gemini-3-flash-preview:generateContent 200 ")
    ]
    assert len(turns) == 2 and len(search) == 1 and len(calls) == 3, calls
    # The tool's result, built from the search's grounding: the pages as sources, and the text's
    # citation marks where the grounding's byte offsets put them.
    source = re.compile(rf"\[1\] [^\n]*\(https://example\.com/search/[a-z0-9-]*{workdir.secret.lower()}/1\)")
    assert source.search(answer), answer
    assert "result 1[1]" in answer, answer


def test_gemini_cli_on_its_default_model_routes_each_turn(rig: Rig, workdir: Workdir) -> None:
    # No `-m`: its model router first asks a flash-lite model, in a JSON call whose schema is
    # written with the SDK's `Type.OBJECT`, how complex the prompt is, then runs the turn on the
    # model that picks; every id is its own, caught by the glob model. An answer that does not
    # match the schema is logged ("[Routing] ... failed") and the default route taken.
    proc, calls = run_gemini(
        rig, workdir, None, read_prompt(workdir), "read_file", {"file_path": str(workdir.notes)}
    )
    assert "[Routing]" not in proc.stderr, proc.stderr
    router = re.compile(r"POST /v1beta/models/gemini-[\w.-]*flash-lite:generateContent 200 ")
    turn = re.compile(r"POST /v1beta/models/gemini-[\w.-]+:streamGenerateContent 200 ")
    assert router.match(calls[0]) and all(turn.match(c) for c in calls[1:]), calls
