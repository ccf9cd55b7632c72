"""The sandbox does bounded work for small requests: each input an attacker probe used to
freeze a worker or take gigabytes (huge JSON-schema minimums, a 7000x7000 edit with n=10,
2048 x 4096-dimension embeddings, 15k-character speech) is a 400 in the family's shape,
answered at once; legitimate heavy calls run off the event loop, so `/healthz` stays fast."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.media_fixtures import make_image
from tests.support.net import HTTPResult, http
from tests.support.served import ServedGateway

QUICK = 2.0  # seconds: a refusal does no real work (the probe's cases took 2-87 s)


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    config = {"sandbox": {"enabled": True}, "limits": {"max_image_upload": 64 * 1024 * 1024}}
    with ServedGateway(Path(tmp_path_factory.mktemp("sandbox-bounds")), config=config) as g:
        yield g


@pytest.fixture(scope="module")
def key(gw: ServedGateway) -> str:
    return gw.create_key()


def _post(
    gw: ServedGateway, key: str, path: str, body: Any, headers: dict[str, str] | None = None
) -> HTTPResult:
    return http("POST", gw.base_url + path, body, {"Authorization": f"Bearer {key}", **(headers or {})})


def _refused_quickly(call: Any) -> HTTPResult:
    started = time.monotonic()
    res: HTTPResult = call()
    elapsed = time.monotonic() - started
    assert res.status == 400, res.body[:500]
    assert elapsed < QUICK, f"refusal took {elapsed:.2f} s"
    return res


def _schema_chat(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "sandbox-chat",
        "messages": [{"role": "user", "content": "give me data"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    }


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "object", "minProperties": 1_000_000}, "minProperties 1000000"),
        ({"type": "array", "minItems": 3_000_000}, "minItems 3000000"),
        ({"type": "string", "minLength": 10**9}, "minLength"),
        ({"type": "array", "minItems": 1000, "items": {"type": "array", "minItems": 1000}}, "values"),
    ],
)
def test_huge_json_schema_minimums_are_refused(
    gw: ServedGateway, key: str, schema: dict[str, Any], words: str
) -> None:
    res = _refused_quickly(lambda: _post(gw, key, "/v1/chat/completions", _schema_chat(schema)))
    error = res.json()["error"]
    assert error["param"] == "response_format" and words in error["message"], error


def test_huge_tool_schema_and_too_many_tools_are_refused(gw: ServedGateway, key: str) -> None:
    def tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "parameters": parameters}}

    body = {
        "model": "sandbox-chat",
        "messages": [{"role": "user", "content": "call it"}],
        "tools": [tool("big", {"type": "object", "minProperties": 1_000_000})],
    }
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/chat/completions", body)).json()["error"]["param"]
        == "tools"
    )
    body["tools"] = [tool(f"t{i}", {"type": "object"}) for i in range(129)]
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/chat/completions", body)).json()["error"]["param"]
        == "tools"
    )


def _form(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "bounds-test-boundary"
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    for name, (filename, data) in files.items():
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: image/jpeg\r\n\r\n".encode()
        )
        out.write(data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def test_image_edit_of_a_7000px_image_with_n_10_is_refused(gw: ServedGateway, key: str) -> None:
    huge = make_image(7000, 7000, "jpeg")
    body, ctype = _form(
        {"model": "sandbox-image", "prompt": "paint it", "n": "10"}, {"image": ("big.jpg", huge)}
    )
    res = _refused_quickly(lambda: _post(gw, key, "/v1/images/edits", body, {"Content-Type": ctype}))
    assert "megapixels" in res.json()["error"]["message"]
    small = make_image(64, 64, "jpeg")
    body, ctype = _form(
        {"model": "sandbox-image", "prompt": "paint it", "size": "7000x7000"}, {"image": ("s.jpg", small)}
    )
    res = _refused_quickly(lambda: _post(gw, key, "/v1/images/edits", body, {"Content-Type": ctype}))
    assert res.json()["error"]["param"] == "size"
    generate = {"model": "sandbox-image", "prompt": "a lake", "size": "4096x4096"}
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/images/generations", generate)).json()["error"]["param"]
        == "size"
    )
    generate = {"model": "sandbox-image", "prompt": "a lake", "n": 11}
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/images/generations", generate)).json()["error"]["param"]
        == "n"
    )


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"dimensions": 4096}, "dimensions"),
        ({"input": ["x"] * 2049}, "input"),
        ({"input": "word " * 9000}, "input"),
        ({"input": "a" * 70_000}, "input"),
        ({"input": ["word " * 8000] * 40}, "input"),
    ],
)
def test_embeddings_beyond_openais_limits_are_refused(
    gw: ServedGateway, key: str, change: dict[str, Any], param: str
) -> None:
    body = {"model": "sandbox-embedding", "input": ["a text"] * 2048, "dimensions": 256, **change}
    res = _refused_quickly(lambda: _post(gw, key, "/v1/embeddings", body))
    assert res.json()["error"]["param"] == param


def test_long_speech_is_refused(gw: ServedGateway, key: str) -> None:
    text = "word " * 3000  # 15,000 characters
    speech = {"model": "sandbox-tts", "input": text, "voice": "alloy"}
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/audio/speech", speech)).json()["error"]["param"]
        == "input"
    )
    res = _refused_quickly(lambda: _post(gw, key, "/fish/v1/tts", {"text": text, "format": "wav"}))
    assert res.json()["status"] == 400 and "4096" in res.json()["message"]
    slow = {"model": "sandbox-tts", "input": "word " * 800, "voice": "alloy", "speed": 0.25}
    assert (
        _refused_quickly(lambda: _post(gw, key, "/v1/audio/speech", slow)).json()["error"]["param"] == "speed"
    )


def test_healthz_stays_fast_during_heavy_legitimate_calls(gw: ServedGateway, key: str) -> None:
    """The largest embeddings OpenAI allows (2048 inputs x 3072 dimensions) and ten big
    images run in worker threads: the event loop keeps answering `/healthz` meanwhile."""
    heavy: list[tuple[str, dict[str, Any]]] = [
        (
            "/v1/embeddings",
            {
                "model": "sandbox-embedding",
                "input": [f"text number {i} about rivers and lakes" for i in range(2048)],
                "dimensions": 3072,
            },
        ),
        (
            "/v1/images/generations",
            {"model": "sandbox-image", "prompt": "a lake", "n": 10, "size": "1792x1024"},
        ),
    ]
    results: list[HTTPResult] = []

    def run() -> None:
        for path, body in heavy:
            results.append(_post(gw, key, path, body))

    worker = threading.Thread(target=run)
    started = time.monotonic()
    worker.start()
    latencies = []
    while worker.is_alive():
        begin = time.monotonic()
        assert http("GET", gw.base_url + "/healthz").status == 200
        latencies.append(time.monotonic() - begin)
        time.sleep(0.02)
    worker.join()
    took = time.monotonic() - started
    assert [r.status for r in results] == [200, 200], [r.body[:300] for r in results]
    assert len(results[0].json()["data"]) == 2048 and len(results[1].json()["data"]) == 10
    assert took > 0.3 and len(latencies) >= 5, (took, latencies)
    print(f"/healthz: {len(latencies)} probes, max {max(latencies) * 1000:.1f} ms, during {took:.2f} s")
    # On the event loop this work blocked /healthz for its whole duration (about a second
    # each); off it, a probe waits only for the GIL between the worker thread's slices.
    assert sorted(latencies)[len(latencies) // 2] < 0.1, latencies
    assert max(latencies) < 0.4, (
        f"/healthz took up to {max(latencies) * 1000:.0f} ms during {took:.1f} s of work"
    )
