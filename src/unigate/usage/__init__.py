"""Usage accounting: recorded off the request path, written in batches."""
