"""Pure format translators between the canonical OpenAI chat format and other families."""
