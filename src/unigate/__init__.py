"""unigate: a unified model gateway. Importing this package has no side effects."""

__version__ = "1.0.0"
