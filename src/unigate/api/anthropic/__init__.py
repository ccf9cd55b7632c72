"""Anthropic's dialect: the Messages API with its token counts, and its model listing."""
