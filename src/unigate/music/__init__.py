"""The music family (Suno-style): request validation and the task record's shape."""
