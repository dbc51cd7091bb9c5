"""Alembic environment for the archive.

kubemedic runs its migrations itself (``kubemedic.store.db.Archive.open``): it builds the Alembic
configuration in code and hands over an open connection in ``config.attributes["connection"]``,
inside the transaction that also checked the current revision. Offline mode (``--sql``) renders
the DDL for the URL in ``sqlalchemy.url``, for a DBA who applies it by hand.
"""

from __future__ import annotations

from alembic import context

from kubemedic.store import schema

config = context.config


def run_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=schema.metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "kubemedic's migrations run through kubemedic.store.db.Archive.open, "
            "which passes the connection in config.attributes['connection']"
        )
    context.configure(
        connection=connection,
        target_metadata=schema.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
