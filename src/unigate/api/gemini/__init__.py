"""Google's Gemini dialect: generateContent and its streams and token counts (content.py),
embeddings, the model listing, and Veo's long-running operations."""
