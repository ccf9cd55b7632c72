"""`azure` protocol: Azure OpenAI, which speaks OpenAI's wire format under a deployment URL.

    base_url: https://{resource}.openai.azure.com/openai/deployments/{deployment}?api-version=2024-10-21

Everything is the `openai` adapter's except the credential, sent as `api-key` (Azure's key
header) instead of `Authorization: Bearer`. The base URL's query (`api-version`) is appended to
every request; the deployment in the path chooses the model, so a route's `model` only names it
in the body, where Azure ignores it.
"""

from __future__ import annotations

from unigate.providers.openai.compatible import OpenAIProvider


class AzureOpenAIProvider(OpenAIProvider):
    protocol = "azure"
    vendor = "Azure OpenAI"

    def credentials(self, api_key: str) -> dict[str, str]:
        return {"api-key": api_key}
