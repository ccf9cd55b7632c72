"""Routers grouped by the client dialect they speak (openai/, anthropic/, gemini/, vendors/,
unigate/, admin/), on the shared serving path (serving/): parse -> service -> render. No
provider names here."""
