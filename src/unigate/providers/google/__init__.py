"""Google upstreams: the Gemini API (gemini.py) and its Veo video jobs (veo.py)."""
