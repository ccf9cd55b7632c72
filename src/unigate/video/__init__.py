"""Video families: the canonical job, its validation per input format, and task records."""
