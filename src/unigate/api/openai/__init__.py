"""OpenAI's dialect: chat and text completions, embeddings, moderations and models (text.py),
audio, images, videos, and the Responses API."""
