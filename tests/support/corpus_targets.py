"""Every family's endpoints with a valid request each, and the wrong types and out-of-range
values aimed at the fields each handler reads: (case name, dotted field, value)."""

from __future__ import annotations

from tests.support.corpus_model import DELETE, UPSTREAM, FieldCase, FilePart, Target, nested_schema
from tests.support.media_fixtures import encode_tone, make_image

HUGE, NEG, INF = 10**12, -1, 1e308
MSG = [{"role": "user", "content": "hello"}]
GEMINI = "/v1beta/models"
NOT_B64 = "!!!not*base64***"
PNG = "image/png"


def _wav() -> FilePart:
    return ("tone.wav", "audio/wav", encode_tone(0.3, "wav"))


def _png() -> FilePart:
    return ("in.png", "image/png", make_image(64, 64))


def numbers(path: str) -> list[FieldCase]:
    """The out-of-range and wrong-type numbers for one numeric field."""
    name = path.rsplit(".", 1)[-1]
    values = {"huge": HUGE, "negative": NEG, "1e308": INF, "past_64_bits": 10**30}
    values |= {"string": "ten", "object": {}}
    return [(f"{name}_{label}", path, value) for label, value in values.items()]


def text_targets() -> list[tuple[Target, list[FieldCase]]]:
    chat = Target(
        "text",
        "openai",
        "/v1/chat/completions",
        {"model": "sandbox-chat", "messages": MSG},
        text="messages.0.content",
        label="chat",
    )
    completions = Target("text", "openai", "/v1/completions", {"model": "sandbox-chat", "prompt": "hi"})
    embeddings = Target(
        "text", "openai", "/v1/embeddings", {"model": "sandbox-embedding", "input": "hi"}, text="input"
    )
    return [
        (chat, [
            ("role_object", "messages.0.role", {}), ("role_array", "messages.0.role", []),
            ("role_number", "messages.0.role", 5), ("role_null", "messages.0.role", None),
            ("content_object", "messages.0.content", {}), ("content_part_number", "messages.0.content", [5]),
            ("content_part_empty", "messages.0.content", [{}]),
            ("content_part_text_object", "messages.0.content", [{"type": "text", "text": {}}]),
            ("content_part_image_url_number", "messages.0.content", [{"type": "image_url", "image_url": 5}]),
            ("image_data_url_bad_base64", "messages.0.content",
             [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + NOT_B64}}]),
            ("message_string", "messages.0", "hi"), ("messages_object", "messages", {}),
            ("model_object", "model", {}), ("model_array", "model", []), ("model_empty", "model", ""),
            ("stream_object", "stream", {}), ("stream_string", "stream", "true"),
            ("stream_options_string", "stream_options", "x"),
            ("tools_object", "tools", {}), ("tools_item_string", "tools", ["x"]),
            ("tools_function_string", "tools", [{"type": "function", "function": "f"}]),
            ("tools_function_name_object", "tools", [{"type": "function", "function": {"name": {}}}]),
            ("tools_parameters_nested_300", "tools",
             [{"type": "function", "function": {"name": "f", "parameters": nested_schema(300)}}]),
            ("response_format_schema_nested_300", "response_format",
             {"type": "json_schema", "json_schema": {"name": "n", "schema": nested_schema(300)}}),
            ("tool_choice_number", "tool_choice", 5),
            ("tool_calls_string", "messages.0.tool_calls", "x", UPSTREAM),
            ("name_object", "messages.0.name", {}, UPSTREAM),
            ("temperature_string", "temperature", "hot"), ("temperature_object", "temperature", {}),
            ("stop_object", "stop", {}), ("response_format_string", "response_format", "json"),
            ("response_format_type_object", "response_format", {"type": {}}),
            *numbers("n"), *numbers("max_tokens"), *numbers("max_completion_tokens"),
            ("logit_bias_string", "logit_bias", "x", UPSTREAM), ("seed_string", "seed", "x", UPSTREAM),
            ("top_logprobs_huge", "top_logprobs", HUGE, UPSTREAM),
            ("logprobs_string", "logprobs", "yes", UPSTREAM),
        ]),
        (completions, [
            ("prompt_object", "prompt", {}), ("prompt_items_objects", "prompt", [{}]),
            ("prompt_null", "prompt", None), ("model_object", "model", {}), ("stream_string", "stream", "x"),
            *numbers("n"), *numbers("max_tokens"), ("echo_string", "echo", "x"),
            ("best_of_huge", "best_of", HUGE, UPSTREAM), ("suffix_object", "suffix", {}),
        ]),
        (embeddings, [
            ("input_object", "input", {}), ("input_items_objects", "input", [{}]),
            ("input_nested_objects", "input", [[{}]]), ("input_empty_array", "input", []),
            ("input_token_huge", "input", [HUGE], UPSTREAM), ("input_empty_string", "input", ""),
            ("model_array", "model", []), *numbers("dimensions"),
            ("encoding_format_object", "encoding_format", {}),
        ]),
    ]  # fmt: skip


def anthropic_targets() -> list[tuple[Target, list[FieldCase]]]:
    body = {"model": "sandbox-chat", "max_tokens": 50, "messages": MSG}
    messages = Target("anthropic", "anthropic", "/v1/messages", body, text="messages.0.content")
    count = Target(
        "anthropic",
        "anthropic",
        "/v1/messages/count_tokens",
        {"model": "sandbox-chat", "messages": MSG},
        text="messages.0.content",
    )
    shared = [
        ("role_object", "messages.0.role", {}),
        ("role_wizard", "messages.0.role", "wizard"),
        ("content_object", "messages.0.content", {}),
        ("content_number", "messages.0.content", 5),
        ("content_block_number", "messages.0.content", [5]),
        ("content_block_empty", "messages.0.content", [{}]),
        ("text_block_text_object", "messages.0.content", [{"type": "text", "text": {}}]),
        (
            "image_block_bad_base64",
            "messages.0.content",
            [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": NOT_B64}}],
        ),
        ("image_block_source_string", "messages.0.content", [{"type": "image", "source": "x"}]),
        (
            "tool_result_content_object",
            "messages.0.content",
            [{"type": "tool_result", "tool_use_id": {}, "content": {}}],
        ),
        ("messages_string", "messages", "hi"),
        ("messages_items_strings", "messages", ["hi"]),
        ("messages_empty", "messages", []),
        ("system_object", "system", {}),
        ("system_blocks_numbers", "system", [5]),
        ("system_block_text_object", "system", [{"type": "text", "text": {}}]),
        ("tools_object", "tools", {}),
        ("tools_item_string", "tools", ["x"]),
        ("tool_input_schema_string", "tools", [{"name": "f", "input_schema": "x"}]),
        ("tool_name_object", "tools", [{"name": {}, "input_schema": {"type": "object"}}]),
        ("tool_input_schema_nested_300", "tools", [{"name": "f", "input_schema": nested_schema(300)}]),
        ("tool_choice_string", "tool_choice", "any"),
        ("tool_choice_type_object", "tool_choice", {"type": {}}),
        ("model_object", "model", {}),
    ]
    return [
        (messages, [
            *shared, *numbers("max_tokens"), ("stream_string", "stream", "yes"),
            ("stop_sequences_string", "stop_sequences", "x"),
            ("stop_sequences_objects", "stop_sequences", [{}]),
            ("temperature_string", "temperature", "x"), ("top_k_object", "top_k", {}, UPSTREAM),
            ("thinking_string", "thinking", "x", UPSTREAM), ("metadata_string", "metadata", "x"),
        ]),
        (count, shared),
    ]  # fmt: skip


def gemini_targets() -> list[tuple[Target, list[FieldCase]]]:
    contents = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
    generate = Target(
        "gemini",
        "gemini",
        f"{GEMINI}/sandbox-chat:generateContent",
        contents,
        text="contents.0.parts.0.text",
        required="contents",
    )
    stream = Target(
        "gemini",
        "gemini",
        f"{GEMINI}/sandbox-chat:streamGenerateContent",
        contents,
        text="contents.0.parts.0.text",
        required="contents",
    )
    embed = Target(
        "gemini",
        "gemini",
        f"{GEMINI}/sandbox-embedding:embedContent",
        {"content": {"parts": [{"text": "hello"}]}},
        text="content.parts.0.text",
        required="content",
    )
    batch = Target(
        "gemini",
        "gemini",
        f"{GEMINI}/sandbox-embedding:batchEmbedContents",
        {"requests": [{"model": "models/sandbox-embedding", "content": {"parts": [{"text": "hi"}]}}]},
        text="requests.0.content.parts.0.text",
        required="requests",
    )
    generate_cases = [
        ("contents_object", "contents", {}), ("contents_string", "contents", "hi"),
        ("contents_empty", "contents", []), ("contents_item_number", "contents", [5]),
        ("role_object", "contents.0.role", {}), ("role_wizard", "contents.0.role", "wizard"),
        ("parts_object", "contents.0.parts", {}), ("parts_string", "contents.0.parts", "hi"),
        ("part_number", "contents.0.parts", [5]), ("part_empty", "contents.0.parts", [{}]),
        ("part_text_object", "contents.0.parts.0.text", {}),
        ("inline_data_bad_base64", "contents.0.parts",
         [{"inline_data": {"mime_type": PNG, "data": NOT_B64}}]),
        ("inlineData_bad_base64", "contents.0.parts", [{"inlineData": {"mimeType": PNG, "data": NOT_B64}}]),
        ("inline_data_data_object", "contents.0.parts", [{"inlineData": {"mimeType": PNG, "data": {}}}]),
        ("inline_data_string", "contents.0.parts", [{"inlineData": "x"}]),
        ("function_call_args_string", "contents.0.parts", [{"functionCall": {"name": "f", "args": "x"}}]),
        ("function_response_number", "contents.0.parts", [{"functionResponse": 5}]),
        ("generation_config_string", "generationConfig", "x"),
        ("max_output_tokens_huge", "generationConfig", {"maxOutputTokens": HUGE}),
        ("max_output_tokens_negative", "generationConfig", {"maxOutputTokens": NEG}),
        ("max_output_tokens_1e308", "generationConfig", {"maxOutputTokens": INF}),
        ("max_output_tokens_string", "generationConfig", {"maxOutputTokens": "ten"}),
        ("candidate_count_huge", "generationConfig", {"candidateCount": HUGE}),
        ("temperature_string", "generationConfig", {"temperature": "hot"}),
        ("stop_sequences_object", "generationConfig", {"stopSequences": {}}),
        ("response_modalities_string", "generationConfig", {"responseModalities": "TEXT"}),
        ("response_schema_string", "generationConfig", {"responseMimeType": "application/json",
                                                        "responseSchema": "x"}),
        ("system_instruction_number", "systemInstruction", 5),
        ("system_instruction_parts_number", "systemInstruction", {"parts": 5}),
        ("tools_string", "tools", "x"), ("tools_item_number", "tools", [5]),
        ("function_declarations_string", "tools", [{"functionDeclarations": "x"}]),
        ("function_parameters_nested_300", "tools",
         [{"functionDeclarations": [{"name": "f", "parameters": nested_schema(300)}]}]),
        ("tool_config_string", "toolConfig", "x"),
        ("safety_settings_string", "safetySettings", "x", UPSTREAM),
    ]  # fmt: skip
    embed_cases = [
        ("content_string", "content", "hi"), ("content_object_empty", "content", {}),
        ("parts_string", "content.parts", "x"), ("part_text_object", "content.parts", [{"text": {}}]),
        ("part_number", "content.parts", [5]),
        ("output_dimensionality_huge", "outputDimensionality", HUGE),
        ("output_dimensionality_negative", "outputDimensionality", NEG),
        ("output_dimensionality_1e308", "outputDimensionality", INF),
        ("output_dimensionality_string", "outputDimensionality", "x"),
        ("task_type_object", "taskType", {}), ("title_object", "title", {}),
    ]  # fmt: skip
    batch_cases = [
        ("requests_object", "requests", {}), ("requests_empty", "requests", []),
        ("request_number", "requests", [5]), ("request_content_string", "requests.0.content", "x"),
        ("request_model_object", "requests.0.model", {}),
        ("request_model_other", "requests.0.model", "models/x"),
        ("request_dimensionality_huge", "requests.0.outputDimensionality", HUGE),
    ]  # fmt: skip
    return [
        (generate, generate_cases),
        (stream, generate_cases[:12]),
        (embed, embed_cases),
        (batch, batch_cases),
    ]


def admin_targets() -> list[tuple[Target, list[FieldCase]]]:
    keys = Target("admin", "openai", "/admin/keys", {"name": "corpus"}, text="name", required="name")
    return [
        (keys, [
            ("name_object", "name", {}), ("name_empty", "name", ""), ("name_too_long", "name", "n" * 201),
            ("models_string", "models", "x"), ("models_objects", "models", [{}]),
            ("families_unknown", "families", ["nope"]), ("families_string", "families", "text"),
            ("rpm_negative", "rpm", NEG), ("rpm_string", "rpm", "x"), ("rpm_past_64_bits", "rpm", 10**30),
            ("budget_negative", "budget", NEG), ("budget_string", "budget", "x"),
            ("expires_at_string", "expires_at", "soon"), ("expires_at_object", "expires_at", {}),
            ("unknown_field", "admin", True),
        ]),
    ]  # fmt: skip


def media_targets() -> list[tuple[Target, list[FieldCase]]]:
    speech = Target(
        "audio",
        "openai",
        "/v1/audio/speech",
        {"model": "sandbox-tts", "input": "hello", "voice": "alloy"},
        text="input",
    )
    stt_body = {"model": "sandbox-transcribe"}
    transcribe = Target("audio", "openai", "/v1/audio/transcriptions", stt_body, {"file": _wav()}, form=True)
    translate = Target("audio", "openai", "/v1/audio/translations", stt_body, {"file": _wav()}, form=True)
    tts = Target("fish", "fish", "/fish/v1/tts", {"text": "hello"}, text="text", required="text")
    asr = Target(
        "fish", "fish", "/fish/v1/asr", {"language": "en"}, {"audio": _wav()}, form=True, required="audio"
    )
    generate = Target(
        "image",
        "openai",
        "/v1/images/generations",
        {"model": "sandbox-image", "prompt": "a lighthouse", "size": "256x256"},
        required="prompt",
    )
    edits = Target(
        "image",
        "openai",
        "/v1/images/edits",
        {"model": "sandbox-image", "prompt": "paint"},
        {"image": _png()},
        form=True,
        required="image",
    )
    core = Target(
        "stability",
        "stability",
        "/stability/v2beta/stable-image/generate/core",
        {"prompt": "a lighthouse"},
        form=True,
        required="prompt",
    )
    sd3 = Target(
        "stability",
        "stability",
        "/stability/v2beta/stable-image/generate/sd3",
        {"prompt": "a lighthouse", "strength": "0.5"},
        {"image": _png()},
        form=True,
        required="prompt",
    )
    stt_cases = [
        ("temperature_string", "temperature", "hot"),
        ("temperature_huge", "temperature", "1e308"),
        ("response_format_unknown", "response_format", "mp3"),
        ("granularities_unknown", "timestamp_granularities[]", "letter"),
        ("granularities_without_verbose", "timestamp_granularities[]", "word"),
        ("model_empty", "model", ""),
    ]
    return [
        (speech, [
            ("input_object", "input", {}), ("input_too_long", "input", "x" * 4097),
            ("voice_number", "voice", 5),
            ("voice_object_no_id", "voice", {}), ("voice_missing", "voice", DELETE),
            ("model_object", "model", {}),
            ("speed_string", "speed", "fast"), ("speed_1e308", "speed", INF),
            ("speed_negative", "speed", NEG),
            ("response_format_object", "response_format", {}),
            ("response_format_unknown", "response_format", "xyz"),
            ("instructions_object", "instructions", {}), ("stream_format_unknown", "stream_format", "x"),
        ]),
        (transcribe, stt_cases), (translate, stt_cases[:4]),
        (tts, [
            ("text_object", "text", {}), ("text_too_long", "text", "x" * 15_001),
            ("format_object", "format", {}),
            *numbers("sample_rate"), ("latency_number", "latency", 5), *numbers("mp3_bitrate"),
            ("normalize_string", "normalize", "maybe"),
            ("opus_at_8000", "*", {"format": "opus", "sample_rate": 8000}),
            ("references_string", "references", "x", UPSTREAM),
            ("chunk_length_object", "chunk_length", {}, UPSTREAM),
        ]),
        (asr, [("ignore_timestamps_maybe", "ignore_timestamps", "maybe")]),
        (generate, [
            ("prompt_object", "prompt", {}), ("prompt_too_long", "prompt", "p" * 32_001), *numbers("n"),
            ("size_words", "size", "huge"), ("size_object", "size", {}), ("size_huge", "size", "99999x99999"),
            ("response_format_object", "response_format", {}),
            ("output_compression_101", "output_compression", 101),
            ("model_object", "model", {}), ("quality_object", "quality", {}),
            ("background_unknown", "background", "x"),
        ]),
        (edits, [("n_huge", "n", str(HUGE)), ("n_negative", "n", "-1"), ("size_words", "size", "huge"),
                 ("prompt_missing", "prompt", DELETE)]),
        (core, [("seed_huge", "seed", str(HUGE)), ("seed_negative", "seed", "-1"),
        ("aspect_ratio_x", "aspect_ratio", "7:3"),
                ("style_preset_x", "style_preset", "x"), ("output_format_gif", "output_format", "gif")]),
        (sd3, [("strength_string", "strength", "x"), ("strength_missing", "strength", DELETE),
               ("model_unknown", "model", "sd9")]),
    ]  # fmt: skip
