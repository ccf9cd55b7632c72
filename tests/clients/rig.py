"""What the real-client tests share: one `unigate serve` in front of the sandbox and of fake
upstreams of every protocol, the installed clients (scripts/setup-clients.sh), and what each
upstream received as tool results, so a test can show a tool's output reached the model.

Model ids at the gateway and the upstream behind each:
  sandbox-chat    the sandbox (in the gateway)
  fake-chat       a chat-completions-only OpenAI-compatible fake (translated for other formats)
  fake-anthropic  a fake Anthropic Messages upstream (same format for Anthropic clients)
  fake-gemini     a fake Gemini upstream
  fake-responses  a fake OpenAI upstream serving /v1/responses natively (`responses: native`)
  gemini-fake-image       the fake Gemini's image model (generateContent with IMAGE output)
  gemini-image-on-openai  a fake OpenAI image upstream's gpt-image-1 (its id starts with
                          `gemini-` because the AI SDK's Google image models must)
  sandbox-image           the sandbox's images
  gemini-fake-voice       the fake Gemini's TTS model (generateContent with AUDIO output)
  gemini-voice-on-openai  the fake OpenAI upstream's tts-1
  sandbox-tts             the sandbox's speech
  gemini-fake-embed       the fake Gemini's embedding model (`:batchEmbedContents`)
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.gateway import GatewayProcess

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "tests" / "clients" / "node"  # the npm project and its drivers (*.mjs)
NODE_BIN = NODE_DIR / "node_modules" / ".bin"
PYTHON_CLIENTS = ROOT / ".venv-clients" / "bin" / "python"
DRIVERS = ROOT / "tests" / "clients" / "drivers"  # the Python clients' drivers, run in .venv-clients
SETUP_HINT = "run scripts/setup-clients.sh first: it installs the pinned clients these tests drive"

SANDBOX = "sandbox-chat"
FAKES = ("fake-chat", "fake-anthropic", "fake-gemini")
TRANSLATED = (SANDBOX, *FAKES)  # every upstream a chat-style client reaches
NATIVE_RESPONSES = "fake-responses"
SIDE_MODELS = "gemini-*"
GEMINI_IMAGE = "gemini-fake-image"
OPENAI_IMAGE = "gemini-image-on-openai"
GEMINI_VOICE = "gemini-fake-voice"
OPENAI_VOICE = "gemini-voice-on-openai"
GEMINI_EMBED = "gemini-fake-embed"
# tiktoken's tables, which LangChain's embeddings tokenise with and tiktoken downloads on first
# use: the machine has no internet, and LiteLLM's package ships them under their cache names.
TIKTOKEN_CACHE = ROOT / ".venv-clients/lib/python3.11/site-packages/litellm/litellm_core_utils/tokenizers"


@dataclass
class Rig:
    gateway: GatewayProcess
    key: str
    chat: FakeOpenAI
    anthropic: FakeAnthropic
    gemini: FakeGemini
    responses: FakeOpenAIResponses
    media: FakeOpenAIMedia

    @property
    def base_url(self) -> str:
        return self.gateway.base_url

    def mark(self) -> dict[str, int]:
        """Where each fake's request log stands; `tool_results` reads what came after."""
        return {model: len(self._received(model)) for model in (*FAKES, NATIVE_RESPONSES)}

    @contextmanager
    def scripted(self, name: str, arguments: dict[str, Any]) -> Iterator[None]:
        """Every fake calls the tool `name` with `arguments` when a request offers it."""
        fakes = (self.chat, self.anthropic, self.gemini, self.responses)
        for fake in fakes:
            fake.tool_call = (name, arguments)
        try:
            yield
        finally:
            for fake in fakes:
                fake.tool_call = None

    def reply_to(self, model: str, prompt: str) -> str:
        """What an answer to a plain `prompt` contains: the sandbox quotes the prompt, a fake
        answers its own text."""
        if model == SANDBOX:
            return prompt
        return {
            "fake-chat": self.chat.reply_text,
            "fake-anthropic": self.anthropic.text,
            "fake-gemini": self.gemini.text,
            NATIVE_RESPONSES: self.responses.reply_text,
        }[model]

    def tool_results(self, model: str, since: dict[str, int]) -> list[str]:
        """The tool results (as JSON text) in the requests `model`'s fake received since `since`."""
        out: list[str] = []
        for body in self._received(model)[since[model] :]:
            out += [json.dumps(r) for r in _tool_results(model, body)]
        return out

    def _received(self, model: str) -> list[Any]:
        if model == "fake-chat":
            return [r.body for r in self.chat.received]
        if model == "fake-anthropic":
            return list(self.anthropic.received)
        if model == "fake-gemini":
            return [body for _call, body, _headers in self.gemini.received]
        if model == NATIVE_RESPONSES:
            return [s.body for s in self.responses.received if s.method == "POST"]
        raise AssertionError(f"no fake behind {model}")


@dataclass
class Workdir:
    """An agent's project folder, the file in it, the secret only that file holds, and the
    agent's HOME (outside the project)."""

    path: Path
    notes: Path
    secret: str
    home: Path


def _tool_results(model: str, body: Any) -> list[Any]:
    if model == "fake-chat":
        return [m.get("content") for m in body.get("messages", []) if m.get("role") == "tool"]
    if model == "fake-anthropic":
        turns = [m["content"] for m in body.get("messages", []) if isinstance(m.get("content"), list)]
        blocks = [b for content in turns for b in content]
        return [b.get("content") for b in blocks if b.get("type") == "tool_result"]
    if model == "fake-gemini":
        parts = [p for c in body.get("contents", []) for p in c.get("parts", [])]
        return [p["functionResponse"] for p in parts if "functionResponse" in p]
    items = body.get("input") if isinstance(body.get("input"), list) else []
    return [i.get("output") for i in items if i.get("type") == "function_call_output"]


@contextmanager
def running_rig(workdir: Path) -> Iterator[Rig]:
    with ExitStack() as stack:
        chat = stack.enter_context(FakeOpenAI())
        anthropic = stack.enter_context(FakeAnthropic())
        gemini = stack.enter_context(FakeGemini())
        responses = stack.enter_context(FakeOpenAIResponses())
        media = stack.enter_context(FakeOpenAIMedia())
        config = {
            "sandbox": {"enabled": True},
            # No upstream keys: the fakes take any request (these tests are about the clients).
            "providers": [
                {"name": "chat", "protocol": "openai", "base_url": chat.base_url},
                {"name": "anthropic", "protocol": "anthropic", "base_url": anthropic.base_url},
                {"name": "gemini", "protocol": "gemini", "base_url": gemini.base_url},
                {
                    "name": "responses",
                    "protocol": "openai",
                    "base_url": responses.base_url,
                    "responses": "native",
                },
                {"name": "media", "protocol": "openai", "base_url": media.base_url},
            ],
            "models": [
                {"name": "fake-chat", "routes": [{"provider": "chat", "model": "gpt-up"}]},
                {"name": "fake-anthropic", "routes": [{"provider": "anthropic", "model": "claude-up"}]},
                {"name": "fake-gemini", "routes": [{"provider": "gemini", "model": "gemini-up"}]},
                {"name": NATIVE_RESPONSES, "routes": [{"provider": "responses", "model": "gpt-up-native"}]},
                {"name": GEMINI_IMAGE, "routes": [{"provider": "gemini", "model": "gemini-2.5-flash-image"}]},
                {"name": OPENAI_IMAGE, "routes": [{"provider": "media", "model": "gpt-image-1"}]},
                {
                    "name": GEMINI_VOICE,
                    "routes": [{"provider": "gemini", "model": "gemini-2.5-flash-preview-tts"}],
                },
                {"name": OPENAI_VOICE, "routes": [{"provider": "media", "model": "tts-1"}]},
                {"name": GEMINI_EMBED, "routes": [{"provider": "gemini", "model": "gemini-embedding-001"}]},
                # What an agent asks for by its own model ids (Gemini CLI's web search, say)
                {"name": SIDE_MODELS, "routes": [{"provider": "sandbox", "model": SANDBOX}]},
            ],
        }
        gateway = stack.enter_context(GatewayProcess(workdir, config=config))
        yield Rig(gateway, gateway.create_key(), chat, anthropic, gemini, responses, media)


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A client's environment: the pinned Node first on PATH, its own HOME, none of the
    caller's vendor keys, proxies or settings (a client reads only what the test gives it)."""
    home.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join([str(NODE_BIN), "/usr/local/bin", "/usr/bin", "/bin"])
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", **extra}


def run_client(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,  # agents read extra input from a pipe: give them none
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_driver(
    argv: list[str], spec: dict[str, Any], home: Path, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run a driver (a Node or Python script running one client) that prints one JSON object."""
    env = clean_env(home, CLIENT_SPEC=json.dumps(spec), **(extra_env or {}))
    proc = run_client(argv, env, home, timeout=110)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run_node_driver(script: str, spec: dict[str, Any], home: Path) -> dict[str, Any]:
    node = NODE_BIN / "node"
    assert node.exists(), SETUP_HINT
    return run_driver([str(node), str(NODE_DIR / script)], spec, home)


def run_python_driver(script: str, spec: dict[str, Any], home: Path, **env: str) -> dict[str, Any]:
    assert PYTHON_CLIENTS.exists(), SETUP_HINT
    return run_driver([str(PYTHON_CLIENTS), str(DRIVERS / script)], spec, home, env)


# A driver's results, where the fakes' logs stood before it ran, and the nonce its tool returned.
Run = tuple[dict[str, Any], dict[str, int], str]


def run_with_nonce(rig: Rig, driver: Callable[[dict[str, Any]], dict[str, Any]], **spec: Any) -> Run:
    """Run `driver` on a spec of the gateway's address and key, `spec`'s entries and a fresh
    nonce for its tool to return (so a result can be shown to have come through the tool)."""
    nonce = f"WX-{secrets.token_hex(4)}"
    since = rig.mark()
    results = driver({"base_url": rig.base_url, "key": rig.key, "nonce": nonce, **spec})
    return results, since, nonce


def outcome(results: dict[str, Any], model: str, case: str) -> dict[str, Any]:
    """One case's result from a driver, failing the test with the client's error if it raised."""
    got: dict[str, Any] = results[model][case]
    assert "error" not in got, f"{case} on {model} raised: {got['error']}"
    return got


# The prompts every SDK driver sends, and what their answers must show.
HELLO = "Hello there"
STREAM = "Stream a short reply please"


def check_reply(rig: Rig, model: str, got: dict[str, Any], prompt: str, streamed: bool = False) -> None:
    assert rig.reply_to(model, prompt) in got["text"], got
    if streamed:
        assert got["chunks"] > 1, got  # it arrived in pieces


def check_tool_round_trip(
    rig: Rig, model: str, got: dict[str, Any], since: dict[str, int], nonce: str
) -> None:
    """The tool ran once (on the city the prompt names), and its result, which alone holds the
    nonce, reached the model (the fake's request; the sandbox quotes it) and its answer."""
    assert got["calls"] == ["Paris"], got
    assert nonce in got["text"], got
    if model != SANDBOX:
        results = rig.tool_results(model, since)
        assert any(nonce in r for r in results), results
