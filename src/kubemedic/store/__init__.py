"""The archive: what the API server forgets, kept in SQLite or PostgreSQL.

``schema`` declares the tables (SQLAlchemy Core), ``migrations`` evolves them (Alembic), ``db``
opens an archive from a URL, ``records`` are the rows and ``extraction`` reads them from object
bodies, ``writer`` upserts batches idempotently with their checkpoints in one transaction
(``bulk`` is each database's fast path, ``episodes`` the findings' episodes), ``retention``
deletes what a policy no longer keeps, ``queries`` answers the CLI's questions, ``repairs`` keeps
node repair's state (repairs in flight, the ledger, decisions, node states) as the plain dicts
the repair package's codec writes (the store never imports the repair package), ``breakers``
keeps the storm breaker's state and audit trail likewise, ``notices`` what each notification
receiver has accepted.

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the
live client, the simulator or the command line.
"""

__all__ = [
    "breakers",
    "bulk",
    "db",
    "episodes",
    "extraction",
    "notices",
    "queries",
    "records",
    "repairs",
    "retention",
    "schema",
    "writer",
]
