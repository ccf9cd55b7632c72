"""LangChain's chat models against the gateway (run in .venv-clients by test_langchain.py):
`ChatOpenAI` (chat completions, and the Responses API with `use_responses_api=True`) with
`base_url` = the gateway's /v1, `ChatAnthropic` and `ChatGoogleGenerativeAI` with `base_url` = the
gateway's root, the gateway key as their API key. For each model of the spec: invoke, stream,
and a `bind_tools` round trip (the tool runs, its ToolMessage goes back for the answer). And
`OpenAIEmbeddings` with its defaults (texts tokenised with tiktoken and sent as token arrays)
on each embedding model: two documents and a query.

Spec (CLIENT_SPEC, JSON): base_url, key, models, embedding_models, nonce. Prints one JSON object
{"<chat model>:<model>": {"invoke": ..., "stream": ..., "tool": ...},
"embeddings:<model>": {"embed": ...}}; a case that raised is {"error": "..."}."""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable
from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

SPEC = json.loads(os.environ["CLIENT_SPEC"])
BASE, KEY = SPEC["base_url"], SPEC["key"]

CHAT_MODELS: dict[str, Callable[[str], BaseChatModel]] = {
    "openai-chat": lambda m: ChatOpenAI(model=m, base_url=f"{BASE}/v1", api_key=KEY, max_retries=0),
    "openai-responses": lambda m: ChatOpenAI(
        model=m, base_url=f"{BASE}/v1", api_key=KEY, max_retries=0, use_responses_api=True
    ),
    "anthropic": lambda m: ChatAnthropic(model_name=m, base_url=BASE, api_key=KEY, max_retries=0),
    "google": lambda m: ChatGoogleGenerativeAI(model=m, base_url=BASE, google_api_key=KEY, max_retries=0),
}


def invoke(llm: BaseChatModel) -> dict[str, Any]:
    return {"text": llm.invoke("Hello there").text}


def stream(llm: BaseChatModel) -> dict[str, Any]:
    pieces = [chunk.text for chunk in llm.stream("Stream a short reply please")]
    return {"text": "".join(pieces), "chunks": len([p for p in pieces if p])}


def tool_round_trip(llm: BaseChatModel) -> dict[str, Any]:
    calls: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        calls.append(city)
        return f"{SPEC['nonce']} in {city}"

    bound = llm.bind_tools([get_weather])
    messages: list[BaseMessage] = [HumanMessage("What is the weather in Paris? Use get_weather.")]
    first = bound.invoke(messages)
    messages.append(first)
    for call in getattr(first, "tool_calls", []):
        messages.append(get_weather.invoke(call))  # a ToolCall in, a ToolMessage out
    final = bound.invoke(messages)
    return {"text": final.text, "calls": calls}


def embed(model: str) -> dict[str, Any]:
    embedder = OpenAIEmbeddings(model=model, base_url=f"{BASE}/v1", api_key=KEY, max_retries=0)  # type: ignore[arg-type]
    documents = embedder.embed_documents(["The first document.", "A second one, longer than the first."])
    return {"documents": [len(v) for v in documents], "query": len(embedder.embed_query("which one?"))}


def main() -> None:
    cases = {"invoke": invoke, "stream": stream, "tool": tool_round_trip}
    out: dict[str, Any] = {}
    for model in SPEC["embedding_models"]:
        try:
            out[f"embeddings:{model}"] = {"embed": embed(model)}
        except Exception:
            out[f"embeddings:{model}"] = {"embed": {"error": traceback.format_exc()}}
    for kind, make in CHAT_MODELS.items():
        for model in SPEC["models"]:
            results: dict[str, Any] = {}
            for name, run in cases.items():
                try:
                    results[name] = run(make(model))
                except Exception:
                    results[name] = {"error": traceback.format_exc()}
            out[f"{kind}:{model}"] = results
    print(json.dumps(out))


if __name__ == "__main__":
    main()
