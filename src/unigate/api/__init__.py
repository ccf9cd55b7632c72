"""Thin routers, one module per family: parse -> service -> render. No provider names here."""
