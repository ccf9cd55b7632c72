"""OpenAI chat completions ⇄ Gemini generateContent: the public entry points in one import.

Requests live in `gemini_request` (OpenAI -> Gemini) and `gemini_inbound` (Gemini -> OpenAI),
non-streaming responses in `gemini_response`, and the incremental SSE translators in
`gemini_stream`.
"""

from __future__ import annotations

from unigate.translate.gemini_inbound import gemini_to_openai_request
from unigate.translate.gemini_request import gemini_schema, openai_to_gemini_request
from unigate.translate.gemini_response import gemini_to_openai_response, openai_to_gemini_response
from unigate.translate.gemini_stream import GeminiToOpenAIStream, OpenAIToGeminiStream

__all__ = [
    "GeminiToOpenAIStream",
    "OpenAIToGeminiStream",
    "gemini_schema",
    "gemini_to_openai_request",
    "gemini_to_openai_response",
    "openai_to_gemini_request",
    "openai_to_gemini_response",
]
