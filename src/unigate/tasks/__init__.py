"""The asynchronous task engine: one store, poller and webhook outbox for every async family;
each family renders tasks in its own shape."""
