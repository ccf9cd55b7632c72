"""The OpenAI Agents SDK against the gateway (run in .venv-clients by test_openai_agents.py): an
`AsyncOpenAI` client with `base_url` = the gateway's /v1 made the SDK's default client, tracing
(which uploads to OpenAI) disabled, an Agent with one function tool run by `Runner.run_sync`.
Each run uses the Responses API (the SDK's default) or chat completions
(`set_default_openai_api("chat_completions")`).

Spec (CLIENT_SPEC, JSON): base_url, key, runs ([api, model] pairs), nonce. Prints one JSON object
{"<api>:<model>": {"final": ..., "calls": [...]}}; a run that raised is {"error": "..."}."""

from __future__ import annotations

import json
import os
import traceback
from typing import Any

from agents import (
    Agent,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

SPEC = json.loads(os.environ["CLIENT_SPEC"])


def run(api: str, model: str) -> dict[str, Any]:
    calls: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        calls.append(city)
        return f"{SPEC['nonce']} in {city}"

    # A client per run: Runner.run_sync runs each on a new event loop.
    client = AsyncOpenAI(base_url=f"{SPEC['base_url']}/v1", api_key=SPEC["key"], max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("responses" if api == "responses" else "chat_completions")
    agent = Agent(
        name="Weather", instructions="Answer with the weather tool.", tools=[get_weather], model=model
    )
    result = Runner.run_sync(agent, "What is the weather in Paris? Use get_weather.")
    return {"text": str(result.final_output), "calls": calls}


def main() -> None:
    set_tracing_disabled(True)
    out: dict[str, Any] = {}
    for api, model in SPEC["runs"]:
        try:
            out[f"{api}:{model}"] = run(api, model)
        except Exception:
            out[f"{api}:{model}"] = {"error": traceback.format_exc()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
