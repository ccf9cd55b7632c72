"""Claude Code (the pinned `@anthropic-ai/claude-code`) pointed at the gateway as its docs say
for an LLM gateway: `ANTHROPIC_BASE_URL` = the gateway's root, the gateway key in
`ANTHROPIC_AUTH_TOKEN`, `--model` a gateway model id, default permission mode, and its documented
switches that keep it off the network. One `claude -p` turn reads a file with its `Read` tool and
answers; the secret in the file reaches the answer only through the tool's result.

Upstreams: the sandbox and the chat-only and Gemini fakes (the Messages request translated), and
the Anthropic fake (same format, relayed)."""

from __future__ import annotations

import pytest

from tests.clients.rig import NODE_BIN, SANDBOX, SETUP_HINT, TRANSLATED, Rig, Workdir, clean_env, run_client

pytestmark = pytest.mark.clients

CLAUDE = NODE_BIN / "claude"


def claude_env(rig: Rig, workdir: Workdir) -> dict[str, str]:
    return clean_env(
        workdir.home,
        ANTHROPIC_BASE_URL=rig.base_url,
        ANTHROPIC_AUTH_TOKEN=rig.key,
        # No update checks, telemetry, error reports or other calls to Anthropic's services.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
    )


def prompt(workdir: Workdir) -> str:
    # The sandbox picks the tool the prompt names and builds every argument of its schema from
    # the prompt's words: `pages` is stated because a made-up value would make Read refuse.
    return f'Read the file_path "{workdir.notes}", pages "1", and tell me the secret word in it.'


@pytest.mark.parametrize("model", TRANSLATED)
def test_claude_code_reads_a_file_and_answers(rig: Rig, workdir: Workdir, model: str) -> None:
    assert CLAUDE.exists(), SETUP_HINT
    since = rig.mark()
    with rig.scripted("Read", {"file_path": str(workdir.notes)}):
        proc = run_client(
            [str(CLAUDE), "-p", prompt(workdir), "--model", model],
            claude_env(rig, workdir),
            workdir.path,
        )
    assert proc.returncode == 0, f"claude exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    answer = proc.stdout
    assert workdir.secret in answer, answer  # only the file, read by the tool, holds it
    if model == SANDBOX:
        assert "The tool Read returned" in answer  # the sandbox quotes the result it received
    else:
        results = rig.tool_results(model, since)
        assert any(workdir.secret in r for r in results), results
