"""The served gateway in front of a fake Gemini API (provider `gem`) and a fake OpenAI media
upstream (provider `oa`), for the tests of calls that cross between the two formats (images,
speech, transcripts, embeddings): each module names its models, and gets both SDKs' clients."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from google import genai
from google.genai import types

from tests.support.fake_gemini import FakeGemini
from tests.support.fake_openai_media import FakeOpenAIMedia
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

GEM_KEY = "g-secret"  # pragma: allowlist secret
OA_KEY = "sk-oa-secret"  # pragma: allowlist secret


@dataclass
class CrossRig:
    gw: ServedGateway
    key: str
    gem: FakeGemini
    oa: FakeOpenAIMedia

    @property
    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.gw.base_url + "/v1", api_key=self.key, max_retries=0)

    @property
    def genai(self) -> genai.Client:
        return genai.Client(api_key=self.key, http_options=types.HttpOptions(base_url=self.gw.base_url))

    def generate(self, model: str, body: dict[str, Any]) -> HTTPResult:
        """A Gemini `generateContent` call as plain HTTP (its headers are the test's)."""
        path = f"/v1beta/models/{model}:generateContent"
        return http("POST", self.gw.base_url + path, body, {"x-goog-api-key": self.key})


@contextmanager
def cross_rig(workdir: Path, models: list[dict[str, Any]], **served: Any) -> Iterator[CrossRig]:
    """`models` routed to `gem` and `oa`; `served`: the rest of the config (`sandbox`) and `env`."""
    env = served.pop("env", None)
    with FakeGemini() as gem, FakeOpenAIMedia() as oa:
        config = {
            "providers": [
                {"name": "gem", "protocol": "gemini", "base_url": gem.base_url, "api_key": GEM_KEY},
                {"name": "oa", "protocol": "openai", "base_url": oa.base_url, "api_key": OA_KEY},
            ],
            "models": models,
            **served,
        }
        with ServedGateway(workdir, config=config, env=env) as gw:
            yield CrossRig(gw, gw.create_key(), gem, oa)
