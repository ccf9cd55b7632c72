"""The Responses API and the admin reload in the bad-input corpus: `POST /v1/responses` bodies
(wrong types for every field, unknown item types, hosted or malformed tools, huge and deep
inputs), the stored responses' paths with odd ids, their query parameters against responses
the case stores first, and `POST /admin/reload` with hostile config files written in place."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.corpus_model import DELETE, UPSTREAM, Case, FieldCase, Target, dumps, nested_schema
from tests.support.corpus_targets import HUGE, NOT_B64, numbers
from tests.support.net import http

HELLO = [{"role": "user", "content": "hello"}]
# Query values that look like numbers to `str.isdigit()` or `int()` but are not an event's
# sequence number (percent-encoded as a client sends them).
NOT_SEQUENCES = {
    "dash_dash_1": "--1",
    "superscript_two": "%C2%B2",
    "minus_superscript_two": "-%C2%B2",
    "circled_one": "%E2%91%A0",
    "exponent": "1e3",
    "eleven_digits": "99999999999",
    "minus_two": "-2",
    "plus_one": "%2B1",
    "spaced": "%201",
    "empty": "",
}
ODD_RESPONSE_IDS = {
    "nul": "%00",
    "surrogate_bytes": "%ED%A0%80",
    "invalid_utf8": "%FF%FE",
    "crlf": "a%0D%0Ab",
    "superscript_two": "%C2%B2",
    "long": "resp_" + "r" * 5000,
    "unknown": "resp_00000000000000000000000000000000",
}


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def _function(**fields: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "name": "f", "parameters": {"type": "object"}, **fields}]


def create_target() -> tuple[Target, list[FieldCase]]:
    target = Target(
        "responses", "openai", "/v1/responses", {"model": "sandbox-chat", "input": "hello"}, text="input"
    )
    message = lambda content: [{"type": "message", "role": "user", "content": content}]  # noqa: E731
    return target, [
        ("model_object", "model", {}), ("model_array", "model", []), ("model_number", "model", 5),
        ("model_empty", "model", ""), ("model_null", "model", None),
        ("input_object", "input", {}), ("input_number", "input", 5), ("input_null", "input", None),
        ("input_missing", "input", DELETE), ("input_empty_array", "input", []),
        ("input_item_number", "input", [5]), ("input_item_string", "input", ["hi"]),
        ("input_item_empty", "input", [{}]), ("input_item_type_unknown", "input", [{"type": "hologram"}]),
        ("input_item_type_object", "input", [{"type": {}}]),
        ("input_role_wizard", "input", [{"role": "wizard", "content": "x"}]),
        ("input_role_number", "input", [{"role": 5, "content": "x"}]),
        ("input_content_number", "input", [{"role": "user", "content": 5}]),
        ("input_content_part_unknown", "input", message([{"type": "input_hologram"}])),
        ("input_content_part_number", "input", message([5])),
        ("input_text_object", "input", message([{"type": "input_text", "text": {}}])),
        ("input_image_url_number", "input", message([{"type": "input_image", "image_url": 5}])),
        ("input_image_bad_base64", "input",
         message([{"type": "input_image", "image_url": "data:image/png;base64," + NOT_B64}])),
        ("input_file_unknown_id", "input", message([{"type": "input_file", "file_id": "file_nope"}]),
         UPSTREAM),
        ("function_call_output_no_call_id", "input", [{"type": "function_call_output", "output": "x"}]),
        ("function_call_output_object", "input",
         [{"type": "function_call_output", "call_id": "c", "output": {}}]),
        ("function_call_arguments_object", "input",
         [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]),
        ("item_reference_unknown", "input", [{"type": "item_reference", "id": "msg_nope"}]),
        ("input_deep_content", "input", message(_deep(900))),
        # Valid, if long. 100k items (3.4 MB) held a worker's event loop ~1 s on a 2-core VM:
        # parsing and translating them is pure Python on the loop, and no bound on input items
        # exists yet.
        ("input_2000_items", "input", HELLO * 2000, UPSTREAM),
        ("input_100_kib_text", "input", "word " * 20_000, UPSTREAM),
        ("instructions_object", "instructions", {}), ("instructions_number", "instructions", 5),
        ("previous_response_id_object", "previous_response_id", {}),
        ("previous_response_id_number", "previous_response_id", 5),
        ("previous_response_id_unknown", "previous_response_id", "resp_00000000000000000000000000000000"),
        ("previous_response_id_long", "previous_response_id", "resp_" + "r" * 5000),
        ("previous_response_id_nul", "previous_response_id", "resp_\u0000"),
        ("previous_response_id_array", "previous_response_id", ["resp_1"]),
        ("tools_object", "tools", {}), ("tools_string", "tools", "x"), ("tools_item_number", "tools", [5]),
        # A tool type a translated route cannot run (hosted, or one it does not know) is dropped
        # and named in x-unigate-dropped-fields, not refused: see test_hosted_search.py.
        ("tools_item_empty", "tools", [{}]),
        ("tools_function_without_name", "tools", [{"type": "function", "parameters": {}}]),
        ("tools_function_name_object", "tools", _function(name={})),
        ("tools_function_parameters_string", "tools", _function(parameters="x")),
        ("tools_function_strict_string", "tools", _function(strict="yes"), UPSTREAM),
        ("tools_function_schema_nested_300", "tools", _function(parameters=nested_schema(300))),
        ("tool_choice_number", "tool_choice", 5), ("tool_choice_unknown", "tool_choice", "sometimes"),
        ("tool_choice_object_empty", "tool_choice", {}),
        ("tool_choice_function_name_object", "tool_choice", {"type": "function", "name": {}}),
        ("tool_choice_unknown_function", "*", {"tools": _function(), "tool_choice": {"type": "function",
                                                                                      "name": "g"}}),
        ("store_string", "store", "yes"), ("store_number", "store", 1),
        ("background_string", "background", "yes"), ("stream_string", "stream", "true"),
        ("stream_object", "stream", {}), ("stream_options_string", "stream_options", "x"),
        ("background_without_store", "*", {"background": True, "store": False}),
        ("temperature_string", "temperature", "hot"), ("temperature_object", "temperature", {}),
        ("top_p_string", "top_p", "x"), *numbers("max_output_tokens"),
        ("max_output_tokens_zero", "max_output_tokens", 0),
        ("metadata_string", "metadata", "x"), ("metadata_array", "metadata", []),
        ("metadata_value_number", "metadata", {"k": 5}),
        ("metadata_17_keys", "metadata", {f"k{i}": "v" for i in range(17)}),
        ("metadata_value_too_long", "metadata", {"k": "v" * 513}),
        ("parallel_tool_calls_string", "parallel_tool_calls", "x"),
        ("text_string", "text", "x"), ("text_format_string", "text", {"format": "x"}),
        ("text_format_unknown", "text", {"format": {"type": "hologram"}}),
        ("text_format_schema_string", "text",
         {"format": {"type": "json_schema", "name": "n", "schema": "x"}}),
        ("text_verbosity_number", "text", {"verbosity": 5}),
        ("text_format_schema_nested_300", "text",
         {"format": {"type": "json_schema", "name": "n", "schema": nested_schema(300)}}),
        ("reasoning_string", "reasoning", "x"),
        ("reasoning_effort_extreme", "reasoning", {"effort": "extreme"}),
        ("truncation_number", "truncation", 5), ("truncation_unknown", "truncation", "sometimes", UPSTREAM),
        ("include_string", "include", "x"), ("include_item_number", "include", [5]),
        ("user_object", "user", {}), ("service_tier_object", "service_tier", {}),
        ("conversation_on_a_translated_route", "conversation", "conv_1"),
        ("prompt_on_a_translated_route", "prompt", {"id": "pmpt_1"}),
        ("max_tool_calls_huge", "max_tool_calls", HUGE, UPSTREAM),
    ]  # fmt: skip


def _made(gw: Any, key: str) -> dict[str, str]:
    """A stored response and a finished background one of this key, made once per gateway."""
    cache: dict[tuple[int, str], dict[str, str]] = _made.__dict__.setdefault("cache", {})
    if (gw.port, key) not in cache:
        auth = {"Authorization": f"Bearer {key}"}
        ids = {}
        for name, extra in (("stored", {}), ("background", {"background": True})):
            body = {"model": "sandbox-chat", "input": "hello", **extra}
            res = http("POST", gw.base_url + "/v1/responses", body, auth)
            assert res.status == 200, res.body
            ids[name] = str(res.json()["id"])
        cache[(gw.port, key)] = ids
    return cache[(gw.port, key)]


@contextlib.contextmanager
def _stored(gw: Any, key: str) -> Iterator[dict[str, str]]:
    yield _made(gw, key)


def query_cases() -> list[Case]:
    """The query of the stored responses' paths, on responses that exist: every value a 400."""
    get = Target("responses", "openai", "/v1/responses/{id}", {}, method="GET", label="retrieve")
    items = Target(
        "responses", "openai", "/v1/responses/{id}/input_items", {}, method="GET", label="input_items"
    )
    cancel = Target("responses", "openai", "/v1/responses/{id}/cancel", {}, label="cancel")

    def case(target: Target, name: str, query: str, expect: frozenset[int] | None = None) -> Case:
        return Case(name, target, lambda: b"", None, path=target.path + query, expect=expect, around=_stored)

    bg, stored = "/v1/responses/{background}", "/v1/responses/{stored}"
    get_bg, get_stored = (Target(**{**get.__dict__, "path": p}) for p in (bg, stored))
    items_stored = Target(**{**items.__dict__, "path": stored + "/input_items"})
    cases = [
        case(get_stored, "stream_on_a_response_not_in_background", "?stream=true"),
        case(Target(**{**cancel.__dict__, "path": stored + "/cancel"}), "cancel_not_in_background", ""),
        case(items_stored, "order_up", "?order=up"),
        case(items_stored, "order_upper_case", "?order=DESC"),
        case(items_stored, "limit_zero", "?limit=0"),
        case(items_stored, "limit_101", "?limit=101"),
    ]
    for name, value in NOT_SEQUENCES.items():
        cases += [
            case(get_bg, f"starting_after_{name}", f"?stream=true&starting_after={value}"),
            case(get_bg, f"starting_after_{name}_without_stream", f"?starting_after={value}"),
            case(get_bg, f"stream_{name}", f"?stream={value}"),
            case(get_stored, f"stream_{name}_not_in_background", f"?stream={value}"),
        ]
        # A blank `limit`/`order` is no parameter, as on every other path; `after` names an
        # item, so an unknown one is an empty page.
        blank = frozenset({200, 400}) if not value else None
        cases += [
            case(items_stored, f"limit_{name}", f"?limit={value}", blank),
            case(items_stored, f"order_{name}", f"?order={value}", blank),
            case(items_stored, f"after_{name}", f"?after={value}", frozenset({200, 400})),
        ]
    return cases


def odd_id_cases() -> list[Case]:
    """Every stored-response path with ids no response can have."""
    out = []
    for method, path, label in (
        ("GET", "/v1/responses/{id}", "retrieve"),
        ("GET", "/v1/responses/{id}/input_items", "input_items"),
        ("POST", "/v1/responses/{id}/cancel", "cancel"),
        ("DELETE", "/v1/responses/{id}", "delete"),
    ):
        target = Target("responses", "openai", path, {}, method=method, label=label)
        for name, raw in ODD_RESPONSE_IDS.items():
            out.append(Case(f"id_{name}", target, lambda: b"", None, path=path.replace("{id}", raw)))
    return out


def _laughs(levels: int) -> bytes:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return ("\n".join(lines) + "\n").encode()


HOSTILE_CONFIGS: dict[str, bytes] = {
    "alias_bomb": _laughs(9),
    "alias_merge_key": b"routing:\n  <<: *defaults\n",
    "nested_100k": b"models: " + b"[" * 100_000 + b"]" * 100_000,
    "not_utf8": b"models: []\n# caf\xe9\n",
    "over_1_mib": b"#" * (1024 * 1024 + 1),
    "nul_character": b"routing: \x00\n",
    "base_60_integer": b"routing: {cooldown_seconds: " + b":".join([b"1"] * 100_000) + b"}\n",
    "two_documents": b"routing: {}\n---\nmodels: []\n",
    "top_level_list": b"- providers\n",
    "model_name_list": b"sandbox: {enabled: true}\nmodels: [{name: [1], routes: [{provider: sandbox}]}]\n",
    "thousand_unknown_keys": dumps({f"k{i}": i for i in range(1000)}),
}


def _in_place(data: bytes) -> Any:
    @contextlib.contextmanager
    def around(gw: Any, _key: str) -> Iterator[dict[str, str]]:
        path = Path(gw.env["UNIGATE_CONFIG"])
        good = path.read_bytes()
        tmp = path.with_suffix(".corpus")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # as an editor saves it
        try:
            yield {}
        finally:
            tmp.write_bytes(good)
            os.replace(tmp, path)

    return around


def reload_cases() -> list[Case]:
    """`POST /admin/reload` of a file each worker refuses: 400 `invalid_config`, quickly, the
    running configuration kept (every later case runs on it)."""
    target = Target("admin", "openai", "/admin/reload", {}, label="reload")
    return [
        Case(f"config_{name}", target, lambda: b"", None, expect=frozenset({400}), around=_in_place(data))
        for name, data in HOSTILE_CONFIGS.items()
    ]
