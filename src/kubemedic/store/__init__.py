"""The archive: what the API server forgets, kept in SQLite or PostgreSQL.

``schema`` declares the tables (SQLAlchemy Core), ``migrations`` evolves them (Alembic), ``db``
opens an archive from a URL, ``writer`` upserts batches idempotently with their checkpoints in
one transaction (``bulk`` is each database's fast path, ``episodes`` the findings' episodes),
``retention`` deletes what a policy no longer keeps, ``queries`` answers the CLI's questions.
"""
