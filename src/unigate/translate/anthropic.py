"""OpenAI chat completions ⇄ Anthropic Messages: the public entry points in one import.

Requests live in `anthropic_request` (OpenAI -> Anthropic) and `anthropic_inbound` (Anthropic ->
OpenAI), non-streaming responses in `anthropic_response`, and the
incremental SSE translators in `anthropic_stream`.
"""

from __future__ import annotations

from unigate.translate.anthropic_inbound import Turns, anthropic_to_openai_request, translate_messages
from unigate.translate.anthropic_request import DEFAULT_MAX_TOKENS, openai_to_anthropic_request
from unigate.translate.anthropic_response import anthropic_to_openai_response, openai_to_anthropic_response
from unigate.translate.anthropic_stream import AnthropicToOpenAIStream, OpenAIToAnthropicStream
from unigate.translate.known_turns import TURNS_BYTES

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "TURNS_BYTES",
    "AnthropicToOpenAIStream",
    "OpenAIToAnthropicStream",
    "Turns",
    "anthropic_to_openai_request",
    "anthropic_to_openai_response",
    "openai_to_anthropic_request",
    "openai_to_anthropic_response",
    "translate_messages",
]
