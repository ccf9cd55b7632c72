"""Durable storage: SQLAlchemy Core (async) over SQLite or PostgreSQL, Alembic migrations."""
