"""``kubemedic web``: the dashboard and its JSON API over an archive (docs/web.md).

Read-only. Listens on 127.0.0.1 unless ``--token-file`` is given; with a token, every request
must carry it. The web stack (FastAPI, uvicorn, Jinja2) loads only when the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kubemedic.cli import archive as archive_cli
from kubemedic.cli._common import _fail

__all__ = ["register"]


def web(
    *,
    db: archive_cli.DbOption = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="The cluster shown when a request names none (default: the first)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            help="Address to listen on; beyond loopback only with --token-file.",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8080,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="File whose first line is the token every request must carry.",
        ),
    ] = None,
) -> None:
    """Serve the dashboard: incidents with their timelines, nodes, events, storms; and the
    JSON API under /api/v1 (schema at /openapi.json)."""
    from kubemedic.web import serving  # noqa: PLC0415 - the web stack loads on use

    try:
        token = None if token_file is None else serving.read_token(token_file)
        serving.check_listen(host, token)
    except serving.WebError as error:
        raise _fail(str(error)) from None
    with archive_cli._open(db) as archive:
        serving.serve(archive, host=host, port=port, token=token, cluster=cluster)


def register(app: typer.Typer) -> None:
    """Add the ``web`` command to ``app``."""
    app.command("web")(web)
