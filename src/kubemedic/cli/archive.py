"""``kubemedic events`` and ``kubemedic oom``: what the archive remembers after the API server
has forgotten it.

The API server deletes Events an hour after their last update (``--event-ttl``), so by the time
someone asks "was the hub OOM-killed?" ``kubectl get events`` shows nothing. ``kubemedic events``
answers from the archive ``kubemedic run`` keeps, in ``kubectl get events``' columns, and marks
the events the API server has since deleted; ``kubemedic oom`` lists OOM kills and evictions with
the container's usage, request and limit.

Times: ``--since``/``--until`` take RFC 3339 times or durations (``30s``, ``2h``, ``7d``,
``1h30m``). A duration counts back from the archive's "now", the newest event time it holds
(the wall clock for an archive without events), the same instant the LAST SEEN ages count from:
an archive of a recorder that stopped, or of a simulated cluster whose clock runs elsewhere,
reads as it did when it was recorded.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kubemedic.cli._common import OutputFormat, _fail, out_console, plain_table
from kubemedic.model import durations
from kubemedic.model.durations import DurationError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from kubemedic.store.db import Archive
    from kubemedic.store.queries import ArchivedEvent, OomEntry

__all__ = ["register"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The archive: a SQLite path or SQLAlchemy URL (default: $KUBEMEDIC_DB, else "
        "kubemedic.db).",
    ),
]
ClusterOption = Annotated[
    str | None, typer.Option("--cluster", help="Only this cluster (default: every one archived).")
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Seen at or after: a duration back from the archive's newest event (30s, 2h, 7d, "
        "1h30m) or an RFC 3339 time.",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option("--until", help="Seen at or before: an RFC 3339 time or a duration ago."),
]
OutputOption = Annotated[OutputFormat, typer.Option("--output", "-o")]

CHECK_PAGES_MAX = 128 * 1024 * 1024
"""A SQLite archive up to this size is checked whole for damage before a query (~0.25 s)."""


# -- flags ------------------------------------------------------------------------------------


def parse_duration(text: str) -> timedelta | None:
    """``30s``, ``90m``, ``2h``, ``7d``, ``1w``, ``1h30m``, ``1.5h`` (the one duration parser,
    :func:`kubemedic.model.durations.parse_duration`): None if not a duration."""
    try:
        return durations.parse_duration(text)
    except DurationError:
        return None


Moment = timedelta | datetime | None
"""A ``--since``/``--until`` value: a duration back from the archive's now, or a time."""


def _moment(flag: str, text: str | None) -> Moment:
    """``--since``/``--until`` read before the archive is opened, so a typo fails first."""
    if text is None:
        return None
    duration = parse_duration(text)
    if duration is not None:
        return duration
    from kubemedic.model import timing  # noqa: PLC0415 - loaded when a command runs

    try:
        return timing.parse_time_flag(flag, text, earliest=datetime.min.replace(tzinfo=UTC))
    except timing.TimeError:
        raise _fail(
            f"{flag} {text[:200]!r}: expected a duration such as 30s, 2h, 7d or 1h30m, or an "
            "RFC 3339 time with a zone such as 2023-02-01T20:00:00Z"
        ) from None


LimitOption = Annotated[
    str | None,
    typer.Option("--limit", metavar="N", help="Only the newest N (still listed oldest first)."),
]
_MAX_LIMIT = 2**62


def _limit(text: str | None) -> int | None:
    """``--limit N``: a whole number of 1 or more (a larger one than the archive holds is
    all of it)."""
    if text is None:
        return None
    value = text.strip()
    if not value.isdigit() or int(value) < 1:
        shown = text if len(text) <= 200 else text[:200] + "…"
        raise _fail(f"--limit {shown!r}: expected a whole number of 1 or more")
    return min(int(value), _MAX_LIMIT) if len(value) < 30 else _MAX_LIMIT


def _at(moment: Moment, now: datetime) -> datetime | None:
    if not isinstance(moment, timedelta):
        return moment
    try:
        return now - moment
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def _window(
    since: str | None, until: str | None, flags: tuple[Moment, Moment], now: datetime
) -> tuple[datetime | None, datetime | None]:
    start, end = _at(flags[0], now), _at(flags[1], now)
    if start is not None and end is not None and start > end:
        raise _fail(
            f"--since {since!r} is after --until {until!r} ({_rfc3339(start)} > {_rfc3339(end)})"
        )
    return start, end


# -- the archive ------------------------------------------------------------------------------


@contextlib.contextmanager
def _open(db: str | None) -> Iterator[Archive]:
    """The archive ``--db`` names, never creating one: a missing SQLite file or a database
    without kubemedic's tables is an error telling how to make one. Inside, anything wrong with
    the archive (a damaged page, a missing table, a row holding a value of the wrong type, a
    server that stopped answering) ends the command with exit 2 naming the archive."""
    from sqlalchemy.engine import make_url  # noqa: PLC0415 - the database stack loads on use

    from kubemedic.store.db import Archive, ArchiveError, NoArchive, database_url  # noqa: PLC0415

    try:
        url = database_url(db)
    except ArchiveError as error:
        raise _fail(f"--db: {error}") from None
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.drivername == "sqlite":
        database = parsed.database or ""
        if database not in ("", ":memory:") and not database.startswith("file:"):
            path = Path(database)
            shown = str(path)
            try:
                is_dir, exists = path.is_dir(), path.exists()
                empty = exists and path.is_file() and path.stat().st_size == 0
            except OSError as error:  # a name too long, a parent that cannot be searched
                raise _fail(f"--db {shown[:200]}: {error.strerror or error}") from None
            if is_dir:
                raise _fail(f"--db {shown}: is a directory, not an archive file")
            # An empty file is no archive either (and opening it would turn it into one).
            if not exists or empty:
                raise _fail(f"no archive at {shown}: run `kubemedic run` first")
            if not path.is_file():
                raise _fail(f"--db {shown}: not a regular file")
    # A small archive is read whole for damage first (quick_check, ~2 ms per MB); a large one
    # is checked page by page as the query reads it, so a question about the last hour of a
    # year's archive stays quick.
    check_pages = parsed.drivername == "sqlite" and _size(parsed.database) <= CHECK_PAGES_MAX
    try:
        archive = Archive.open(url, migrate=False, check_pages=check_pages)
    except NoArchive:
        raise _fail(f"no archive at {shown}: run `kubemedic run` first") from None
    except ArchiveError as error:
        raise _fail(str(error)) from None
    try:
        with archive.failures():
            yield archive
    except ArchiveError as error:  # damaged, not answering, a row that cannot be read
        raise _fail(str(error)) from None
    finally:
        archive.close()


def _size(database: str | None) -> int:
    try:
        return Path(database or "").stat().st_size
    except (OSError, ValueError):
        return 0


def _archive_now(archive: Archive, cluster: str | None) -> datetime:
    from kubemedic.store import queries  # noqa: PLC0415

    return queries.newest_event_time(archive, cluster=cluster) or datetime.now(UTC)


def _unknown_cluster(archive: Archive, cluster: str | None) -> str:
    """A hint when ``--cluster`` names a cluster the archive does not hold (a typo, or the
    kubeconfig's cluster name differs from the one recorded)."""
    from kubemedic.store import queries  # noqa: PLC0415

    if cluster is None:
        return ""
    known = queries.clusters(archive)
    if cluster in known:
        return ""
    return f": the archive holds no cluster {cluster!r} (it holds: {', '.join(known) or 'none'})"


# -- printing helpers -------------------------------------------------------------------------


def _rfc3339(when: datetime | None) -> str | None:
    """RFC 3339 in UTC with ``Z``; microseconds only when there are some (``MicroTime``)."""
    if when is None:
        return None
    when = when.astimezone(UTC)
    if when.microsecond:
        return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(when: datetime | None, now: datetime) -> str:
    from kubemedic.model import timing  # noqa: PLC0415

    return "<unknown>" if when is None else timing.kubectl_age(now - when)


def _cell(text: str, style: str = "") -> Text:
    """Cluster data as a table cell: never read as Rich markup, control characters (terminal
    escapes a pod could put in a message) shown as ``?``, line breaks as spaces."""
    from rich.text import Text  # noqa: PLC0415 - Rich loads when a table is printed

    flat = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    return Text(_CONTROL.sub("?", flat), style=style)


def _amount(value: int | None, resource: str) -> str:
    from fractions import Fraction  # noqa: PLC0415

    from kubemedic.model.quantities import Format, Quantity  # noqa: PLC0415

    if value is None:
        return ""
    if resource == "cpu":
        return f"{value}m"
    if resource in ("memory", "ephemeral-storage", ""):
        return Quantity(Fraction(value), Format.BINARY_SI).human()
    return str(value)


def _write_json(document: object) -> None:
    import orjson  # noqa: PLC0415

    sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


# -- kubemedic events -------------------------------------------------------------------------


def event_json(event: ArchivedEvent) -> dict[str, Any]:
    """One archived event as the JSON output shows it."""
    return {
        "cluster": event.cluster,
        "uid": event.uid,
        "apiVersion": event.api_version,
        "namespace": event.namespace or None,
        "name": event.name,
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
        "object": {
            "kind": event.object_kind,
            "namespace": event.object_namespace or None,
            "name": event.object_name,
            "uid": event.object_uid or None,
            "fieldPath": event.field_path or None,
        },
        "source": {"component": event.source or None, "host": event.host or None},
        "node": event.node or None,
        "count": event.count,
        "firstSeen": _rfc3339(event.first_seen),
        "lastSeen": _rfc3339(event.last_seen),
        "deletedAt": _rfc3339(event.deleted_at),
        "counts": [
            {"count": seen.count, "lastSeen": _rfc3339(seen.last_seen)} for seen in event.counts
        ],
        "resourceVersion": event.resource_version,
    }


def _events_table(
    found: Sequence[ArchivedEvent], *, now: datetime, namespaced: bool, console: Console
) -> None:
    several = len({event.cluster for event in found}) > 1
    columns = [
        *(["CLUSTER"] if several else []),
        *([] if namespaced else ["NAMESPACE"]),
        "LAST SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "MESSAGE",
        "COUNT",
        "FIRST SEEN",
        "GONE",
    ]
    gone = sum(1 for event in found if event.gone)
    caption = f"{len(found)} event(s); ages as of {_rfc3339(now)}"
    if gone:
        caption += f"; GONE: {gone} deleted by the API server since (event TTL)"
    table = plain_table(columns, caption)
    for event in found:
        warning = event.type == "Warning"
        cells = [
            *([_cell(event.cluster)] if several else []),
            *([] if namespaced else [_cell(event.namespace)]),
            _cell(_age(event.last_seen, now)),
            _cell(event.type, "yellow" if warning else ""),
            _cell(event.reason, "bold" if warning else ""),
            _cell(f"{event.object_kind.lower()}/{event.object_name}"),
            _cell(event.message),
            _cell(str(event.count)),
            _cell(_age(event.first_seen, now)),
            _cell("gone" if event.gone else "", "dim"),
        ]
        table.add_row(*cells)
    console.print(table)


def events(
    *,
    db: DbOption = None,
    cluster: ClusterOption = None,
    reason: Annotated[str | None, typer.Option(help="Only this reason (exact: Evicted).")] = None,
    type_: Annotated[
        str | None, typer.Option("--type", help="Only this type: Normal or Warning.")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only events in this namespace.")
    ] = None,
    object_: Annotated[
        str | None,
        typer.Option(
            "--object", help="Only events about KIND/NAME (pod/hub-0, no/core-2, deploy/hub)."
        ),
    ] = None,
    node: Annotated[str | None, typer.Option(help="Only events from or about this node.")] = None,
    since: SinceOption = None,
    until: UntilOption = None,
    grep: Annotated[
        str | None,
        typer.Option(
            help="Only events whose message, reason or object name contains this text (any case)."
        ),
    ] = None,
    limit: LimitOption = None,
    output: OutputOption = OutputFormat.table,
) -> None:
    """Archived events, as `kubectl get events` would show them had the API server kept them."""
    from kubemedic.store import queries  # noqa: PLC0415

    flags = (_moment("--since", since), _moment("--until", until))
    newest = _limit(limit)
    kind = name = None
    if object_ is not None:
        try:
            kind, name = queries.parse_object(object_)
        except ValueError as error:
            raise _fail(f"--object {error}") from None
    with _open(db) as archive:
        now = _archive_now(archive, cluster)
        start, end = _window(since, until, flags, now)
        query = queries.EventQuery(
            cluster=cluster,
            reason=reason,
            type=type_,
            namespace=namespace,
            object_kind=kind,
            object_name=name,
            node=node,
            since=start,
            until=end,
            grep=grep,
            limit=newest,
        )
        found = queries.find_events(archive, query)
        unknown = _unknown_cluster(archive, cluster) if not found else ""
    if output is OutputFormat.json:
        _write_json([event_json(event) for event in found])
    elif not found:
        out_console().print(f"no events match{unknown}", highlight=False)
    else:
        _events_table(found, now=now, namespaced=namespace is not None, console=out_console())


# -- kubemedic oom ----------------------------------------------------------------------------


def oom_json(entry: OomEntry) -> dict[str, Any]:
    """One OOM kill or eviction as the JSON output shows it."""
    return {
        "kind": entry.kind,
        "time": _rfc3339(entry.time),
        "cluster": entry.cluster,
        "namespace": entry.namespace,
        "pod": entry.pod,
        "podUid": entry.pod_uid,
        "container": entry.container or None,
        "node": entry.node or None,
        "owner": {"kind": entry.owner_kind, "name": entry.owner_name} if entry.owner_kind else None,
        "resource": entry.resource or None,
        "unit": "millicores" if entry.resource == "cpu" else "bytes",
        "usage": entry.usage,
        "usageSource": entry.usage_source or None,
        "usageAt": _rfc3339(entry.usage_at),
        "request": entry.request,
        "limit": entry.limit,
        "restartCount": entry.restart_count,
        "exitCode": entry.exit_code,
        "threshold": entry.threshold or None,
        "available": entry.available or None,
        "message": entry.message,
    }


def _usage_cell(entry: OomEntry) -> str:
    shown = _amount(entry.usage, entry.resource)
    return f"≥{shown}" if shown and entry.usage_source == "limit" else shown


def _details(entry: OomEntry) -> str:
    if entry.kind == "eviction":
        return entry.message or f"evicted: node low on {entry.resource or 'a resource'}"
    parts = [f"exit code {entry.exit_code}" if entry.exit_code is not None else "OOMKilled"]
    from kubemedic.model import timing  # noqa: PLC0415

    if entry.usage_source == "metrics" and entry.usage_at is not None and entry.time is not None:
        before = timing.kubectl_age(entry.time - entry.usage_at)
        parts.append(f"usage sampled {before} before the kill")
    elif entry.usage_source == "limit":
        parts.append("no usage sample: it used at least its limit")
    if entry.message:
        parts.append(entry.message)
    return "; ".join(parts)


def _what(entry: OomEntry) -> Text:
    if entry.kind == "oom-kill":
        return _cell("OOMKilled", "bold red")
    return _cell("Evicted", "yellow")


def _oom_table(found: Sequence[OomEntry], *, console: Console) -> None:
    several = len({entry.cluster for entry in found}) > 1
    # The details (the kubelet's message, where the usage came from) need room; on a narrow
    # terminal they would fold a letter per line: --output json has them all.
    details = console.width >= 170
    columns = [
        *(["CLUSTER"] if several else []),
        "TIME",
        "WHAT",
        "NAMESPACE",
        "POD",
        "CONTAINER",
        "NODE",
        "USAGE",
        "REQUEST",
        "LIMIT",
        "RESTARTS",
        *(["DETAILS"] if details else []),
    ]
    kills = sum(1 for entry in found if entry.kind == "oom-kill")
    table = plain_table(columns, f"{kills} OOM kill(s), {len(found) - kills} eviction(s)")
    for entry in found:
        restarts = "" if entry.restart_count is None else str(entry.restart_count)
        table.add_row(
            *([_cell(entry.cluster)] if several else []),
            _cell(_rfc3339(entry.time) or "<unknown>"),
            _what(entry),
            _cell(entry.namespace),
            _cell(entry.pod),
            _cell(entry.container),
            _cell(entry.node),
            _cell(_usage_cell(entry)),
            _cell(_amount(entry.request, entry.resource)),
            _cell(_amount(entry.limit, entry.resource)),
            _cell(restarts),
            *([_cell(_details(entry))] if details else []),
        )
    console.print(table)


def oom(
    *,
    db: DbOption = None,
    cluster: ClusterOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only pods in this namespace.")
    ] = None,
    node: Annotated[str | None, typer.Option(help="Only pods on this node.")] = None,
    limit: LimitOption = None,
    output: OutputOption = OutputFormat.table,
) -> None:
    """OOM kills and evictions, with the pod, container, node, usage, request and limit."""
    from kubemedic.store import queries  # noqa: PLC0415

    flags = (_moment("--since", since), _moment("--until", until))
    newest = _limit(limit)
    with _open(db) as archive:
        start, end = _window(since, until, flags, _archive_now(archive, cluster))
        found = queries.oom_report(
            archive, cluster=cluster, since=start, until=end, namespace=namespace, node=node
        )
        unknown = _unknown_cluster(archive, cluster) if not found else ""
    if newest is not None:
        found = found[-newest:]
    if output is OutputFormat.json:
        _write_json([oom_json(entry) for entry in found])
    elif not found:
        out_console().print(f"no OOM kills or evictions match{unknown}", highlight=False)
    else:
        _oom_table(found, console=out_console())


def register(app: typer.Typer) -> None:
    """Add ``events`` and ``oom`` to ``app``."""
    app.command("events")(events)
    app.command("oom")(oom)
