"""Same format, no translation: the `anthropic` SDK through `/v1/messages` to an `anthropic`
upstream is relayed as is (only the model id mapped), streams included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from tests.support.fake_anthropic import FakeAnthropic
from tests.support.served import ServedGateway
from tests.support.waits import until


@pytest.fixture(scope="module")
def setup(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[anthropic.Anthropic, FakeAnthropic, ServedGateway]]:
    with FakeAnthropic() as fake:
        config = {
            "providers": [
                {
                    "name": "claude",
                    "protocol": "anthropic",
                    "base_url": fake.base_url,
                    "api_key": "sk-ant-upstream",
                }
            ],
            "models": [{"name": "claude-chat", "routes": [{"provider": "claude", "model": "claude-up-1"}]}],
        }
        with ServedGateway(Path(tmp_path_factory.mktemp("passthrough")), config=config) as gw:
            client = anthropic.Anthropic(base_url=gw.base_url, api_key=gw.create_key(), max_retries=0)
            yield client, fake, gw


def test_body_is_relayed_untouched(setup: tuple[anthropic.Anthropic, FakeAnthropic, ServedGateway]) -> None:
    client, fake, _ = setup
    msg = client.messages.create(
        model="claude-chat",
        max_tokens=64,
        extra_body={"top_k": 7},
        metadata={"user_id": "u-42"},
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "Hi"}],
    )
    assert msg.content[0].text == "Hello from the fake Anthropic upstream"  # type: ignore[union-attr]
    assert msg.id == "msg_fake" and msg.usage.input_tokens == 21
    sent = fake.received[-1]
    assert sent["model"] == "claude-up-1"
    # Fields the OpenAI form has no place for survive only because nothing was translated.
    assert sent["top_k"] == 7 and sent["metadata"] == {"user_id": "u-42"}
    assert sent["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_stream_is_relayed_and_accounted(
    setup: tuple[anthropic.Anthropic, FakeAnthropic, ServedGateway],
) -> None:
    client, fake, gw = setup
    with client.messages.stream(
        model="claude-chat", max_tokens=64, messages=[{"role": "user", "content": "Stream"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text.strip() == "Hello from the fake Anthropic upstream"
    assert final.id == "msg_fake" and final.usage.output_tokens == 9
    assert fake.received[-1]["stream"] is True

    def accounted() -> bool:  # once the usage flush has run
        rows = gw.admin("GET", "/admin/usage").json()["data"]
        return any(r["model"] == "claude-chat" and r["completion_tokens"] >= 9 for r in rows)

    until(accounted, "the stream's usage row")


def test_death_mid_stream_is_an_error_event(
    setup: tuple[anthropic.Anthropic, FakeAnthropic, ServedGateway],
) -> None:
    client, fake, _ = setup
    fake.mode = "die_mid"
    try:
        with (
            pytest.raises(anthropic.APIError),
            client.messages.stream(
                model="claude-chat", max_tokens=64, messages=[{"role": "user", "content": "Stream"}]
            ) as stream,
        ):
            for _ in stream.text_stream:
                pass
    finally:
        fake.mode = "ok"
