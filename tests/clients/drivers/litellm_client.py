"""LiteLLM as a client of the gateway (run in .venv-clients by test_litellm.py):
`litellm.completion` with `api_base` = the gateway and the gateway key as `api_key`, the model
as `openai/<id>` (an OpenAI-compatible server, `api_base` = the gateway's /v1) or
`anthropic/<id>` (Anthropic's Messages API, `api_base` = the gateway's root) or `gemini/<id>`
(Google AI Studio's Gemini API, `api_base` = the gateway's /v1beta). LiteLLM reads its
bundled model price map (LITELLM_LOCAL_MODEL_COST_MAP, set by the test) instead of fetching it.
For each model: a completion, a stream, and a tool round trip.

Spec (CLIENT_SPEC, JSON): base_url, key, models, nonce. Prints one JSON object
{"<route>:<model>": {"completion": ..., "stream": ..., "tool": ...}}; a case that raised is
{"error": "..."}."""

from __future__ import annotations

import json
import os
import traceback
from typing import Any

import litellm

SPEC = json.loads(os.environ["CLIENT_SPEC"])
BASES = {
    "openai": f"{SPEC['base_url']}/v1",
    "anthropic": SPEC["base_url"],
    "gemini": f"{SPEC['base_url']}/v1beta",  # LiteLLM appends the method path, not the version
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def call(route: str, model: str, messages: list[dict[str, Any]], **extra: Any) -> Any:
    return litellm.completion(
        model=f"{route}/{model}",
        api_base=BASES[route],
        api_key=SPEC["key"],
        messages=messages,
        max_tokens=400,
        num_retries=0,
        **extra,
    )


def completion(route: str, model: str) -> dict[str, Any]:
    reply = call(route, model, [{"role": "user", "content": "Hello there"}])
    return {"text": reply.choices[0].message.content}


def stream(route: str, model: str) -> dict[str, Any]:
    chunks = call(route, model, [{"role": "user", "content": "Stream a short reply please"}], stream=True)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    return {"text": "".join(pieces), "chunks": len(pieces)}


def tool_round_trip(route: str, model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris? Use get_weather."}
    ]
    first = call(route, model, messages, tools=[WEATHER]).choices[0].message
    messages.append(first.model_dump(exclude_none=True))
    calls: list[str] = []
    for tool_call in first.tool_calls or []:
        city = json.loads(tool_call.function.arguments)["city"]
        calls.append(city)
        messages.append(
            {"role": "tool", "tool_call_id": tool_call.id, "content": f"{SPEC['nonce']} in {city}"}
        )
    final = call(route, model, messages, tools=[WEATHER]).choices[0].message
    return {"text": final.content or "", "calls": calls}


def main() -> None:
    cases = {"completion": completion, "stream": stream, "tool": tool_round_trip}
    out: dict[str, Any] = {}
    for route in BASES:
        for model in SPEC["models"]:
            results: dict[str, Any] = {}
            for name, run in cases.items():
                try:
                    results[name] = run(route, model)
                except Exception:
                    results[name] = {"error": traceback.format_exc()}
            out[f"{route}:{model}"] = results
    print(json.dumps(out))


if __name__ == "__main__":
    main()
