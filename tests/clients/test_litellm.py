"""LiteLLM as a client (pinned `litellm`, run in .venv-clients): `litellm.completion` with
`api_base` = the gateway and the gateway key as `api_key`, the model as `openai/<id>`
(`api_base` = the gateway's `/v1`), as `anthropic/<id>` (`api_base` = the gateway's root) and as
`gemini/<id>` (`api_base` = the gateway's `/v1beta`), on
the sandbox and the chat-only, Anthropic and Gemini fakes: a completion, a stream and a tool
round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.rig import (
    HELLO,
    STREAM,
    TRANSLATED,
    Rig,
    Run,
    check_reply,
    check_tool_round_trip,
    outcome,
    run_python_driver,
    run_with_nonce,
)

pytestmark = pytest.mark.clients

ROUTES = ("openai", "anthropic", "gemini")


@pytest.fixture(scope="module")
def ran(rig: Rig, tmp_path_factory: pytest.TempPathFactory) -> Run:
    home: Path = tmp_path_factory.mktemp("litellm")
    # The bundled price map, not a download of the current one at import.
    return run_with_nonce(
        rig,
        lambda spec: run_python_driver("litellm_client.py", spec, home, LITELLM_LOCAL_MODEL_COST_MAP="True"),
        models=list(TRANSLATED),
    )


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("route", ROUTES)
def test_completion(ran: Run, rig: Rig, route: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{route}:{model}", "completion"), HELLO)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("route", ROUTES)
def test_stream(ran: Run, rig: Rig, route: str, model: str) -> None:
    check_reply(rig, model, outcome(ran[0], f"{route}:{model}", "stream"), STREAM, streamed=True)


@pytest.mark.parametrize("model", TRANSLATED)
@pytest.mark.parametrize("route", ROUTES)
def test_tool_round_trip(ran: Run, rig: Rig, route: str, model: str) -> None:
    results, since, nonce = ran
    check_tool_round_trip(rig, model, outcome(results, f"{route}:{model}", "tool"), since, nonce)
