"""OpenAI and OpenAI-compatible upstreams: chat, media and jobs (compatible.py), Azure
(azure.py), the Responses API relay (responses.py), video jobs (videos.py) and error mapping
(errors.py)."""
