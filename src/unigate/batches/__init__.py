"""Batches the gateway runs: many calls as one long task (`runner.py`), each line through the
direct call's own path (`lines.py`)."""
