"""``kubemedic incidents list|show|export``: the archive's findings and signals as incidents.

Incidents are grouped from the whole archive (or one ``--cluster``) every time, so an id means
the same incident in ``list``, ``show`` and ``export``; ``--since``/``--until`` then choose which
incidents ``list`` prints (those overlapping the window). Times take RFC 3339 or a duration back
from the archive's newest event, as ``kubemedic events`` does. The archive is never created: a
missing one is an error (exit 2), as is an id the archive does not hold.
"""

from __future__ import annotations

import enum
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli import archive as archive_cli
from kubemedic.cli._common import ForceOption, OutputFormat, _fail, err_console, out_console
from kubemedic.output import files

if TYPE_CHECKING:
    from kubemedic.incidents.model import Incident
    from kubemedic.store.db import Archive

__all__ = ["register"]

incidents_app = typer.Typer(
    name="incidents",
    help="Incidents: findings and archived signals grouped by cause, linked across days.",
    no_args_is_help=True,
)

IdArgument = Annotated[
    str, typer.Argument(help="An incident id from `kubemedic incidents list` (a prefix will do).")
]


class ExportFormat(enum.StrEnum):
    markdown = "markdown"
    json = "json"


def _all(archive: Archive, cluster: str | None) -> list[Incident]:
    from kubemedic.incidents import archive as incident_archive  # noqa: PLC0415

    # A row that cannot be read ends the command in archive_cli._open, naming the archive.
    return incident_archive.incidents(archive.engine, cluster=cluster)


def _find(found: list[Incident], wanted: str, *, archive: Archive, db: str | None) -> Incident:
    text = wanted.strip()
    exact = [incident for incident in found if incident.id == text]
    if exact:
        return exact[0]
    prefix = text if text.startswith("inc-") else f"inc-{text}"
    matches = [incident for incident in found if text and incident.id.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    listing = "kubemedic incidents list" + (f" --db {db}" if db else "")
    if len(matches) > 1:
        ids = ", ".join(incident.id for incident in matches[:10])
        raise _fail(f"incident id {wanted!r} is ambiguous in {archive.url}: it matches {ids}")
    raise _fail(
        f"no incident {wanted!r} in {archive.url} ({len(found)} incident(s) there); "
        f"find the ids with `{listing}`"
    )


@incidents_app.command("list")
def list_incidents(
    *,
    db: archive_cli.DbOption = None,
    cluster: archive_cli.ClusterOption = None,
    since: archive_cli.SinceOption = None,
    until: archive_cli.UntilOption = None,
    output: archive_cli.OutputOption = OutputFormat.table,
) -> None:
    """List the archive's incidents, newest first."""
    flags = (archive_cli._moment("--since", since), archive_cli._moment("--until", until))
    with archive_cli._open(db) as archive:
        now = archive_cli._archive_now(archive, cluster)
        start, end = archive_cli._window(since, until, flags, now)
        found = _all(archive, cluster)
        shown = [i for i in found if _overlaps(i, start, end)]
        shown.sort(key=lambda i: (i.start, i.id), reverse=True)
        from kubemedic.incidents import render  # noqa: PLC0415

        if output is OutputFormat.json:
            sys.stdout.buffer.write(render.list_json(shown))
            sys.stdout.flush()
            return
        console = out_console()
        if not shown:
            hint = archive_cli._unknown_cluster(archive, cluster)
            console.print(f"No incidents in {archive.url}{hint}.", highlight=False)
            return
        render.render_table(shown, console=console, title=f"Incidents in {archive.url}")


def _overlaps(incident: Incident, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or incident.end >= start) and (end is None or incident.start <= end)


@incidents_app.command("show")
def show(
    incident_id: IdArgument,
    *,
    db: archive_cli.DbOption = None,
    cluster: archive_cli.ClusterOption = None,
) -> None:
    """Show one incident: summary, timeline, suspected cause, follow-ups, related incidents."""
    with archive_cli._open(db) as archive:
        incident = _find(_all(archive, cluster), incident_id, archive=archive, db=db)
        from kubemedic.incidents import render  # noqa: PLC0415

        render.render_detail(incident, console=out_console())


@incidents_app.command("export")
def export(
    incident_id: IdArgument,
    *,
    format: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="markdown: a postmortem draft.")
    ] = ExportFormat.markdown,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write to this file, atomically (default: stdout)."),
    ] = None,
    force: ForceOption = False,
    db: archive_cli.DbOption = None,
    cluster: archive_cli.ClusterOption = None,
) -> None:
    """Export one incident as a postmortem draft (Markdown) or as JSON."""
    if out is not None:  # refused before the archive is read
        try:
            files.check_target(out, flag="--out", force=force)
        except files.OutputError as error:
            raise _fail(str(error)) from None
    with archive_cli._open(db) as archive:
        found = _all(archive, cluster)
        incident = _find(found, incident_id, archive=archive, db=db)
        from kubemedic.incidents import render  # noqa: PLC0415

        if format is ExportFormat.json:
            data = render.to_json(incident)
        else:
            related_ids = {link.id for link in incident.related}
            related = [other for other in found if other.id in related_ids]
            data = render.to_markdown(incident, related, source=archive.url).encode()
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        files.write_atomically(out, data, flag="--out", force=force)
    except files.OutputError as error:
        raise _fail(str(error)) from None
    err_console().print(f"wrote {incident.id} to {out}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``incidents`` command group to ``app``."""
    app.add_typer(incidents_app)
