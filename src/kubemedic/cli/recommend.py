"""``kubemedic recommend``: requests and limits per workload container, from the archive.

The rule is :mod:`kubemedic.recommend.policy`'s (Robusta KRR's ``simple`` strategy: CPU request
at the 95th percentile, no CPU limit, memory request = limit = peak + 15 %; never below the peak
that ended in an OOM kill or an eviction; "no data" below a minimum history). The current
values come from ``--snapshot`` when given (the workloads' pod templates; the snapshot also
places pods the archive knows no owner of), else from what the archive knows (the memory
request and limit of archived terminations and evictions).

``--since``/``--until`` take durations back from the archive's newest event or RFC 3339 times,
as ``kubemedic events`` does. The archive is never created: a missing one is an error (exit 2),
as are a malformed ``--workload``, a bad duration, a percentile out of range or an unreadable
snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli import archive as archive_cli
from kubemedic.cli._common import OutputFormat, _fail, out_console, plain_table

if TYPE_CHECKING:
    from rich.console import Console

    from kubemedic.model.view import ClusterView
    from kubemedic.recommend.policy import Recommendation, Settings

__all__ = ["register"]


def _workload(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    from kubemedic.store import queries  # noqa: PLC0415

    try:
        return queries.parse_object(text)
    except ValueError:
        raise _fail(
            f"--workload {text[:200]!r}: expected KIND/NAME, e.g. deployment/hub or "
            "statefulset/prometheus"
        ) from None


def _settings(*, percentile: float, buffer: float, min_samples: int, min_history: str) -> Settings:
    from kubemedic.model import durations  # noqa: PLC0415
    from kubemedic.recommend import policy  # noqa: PLC0415

    try:
        span = durations.parse_duration(min_history)
    except durations.DurationError:
        raise _fail(
            f"--min-history {min_history[:200]!r}: expected a duration such as 30m, 3h or 1h30m"
        ) from None
    try:
        return policy.Settings(
            cpu_percentile=percentile,
            memory_buffer=buffer / 100,
            min_samples=min_samples,
            min_span=span,
        )
    except policy.SettingsError as error:
        raise _fail(str(error)) from None


def _view(snapshot: Path | None) -> ClusterView | None:
    if snapshot is None:
        return None
    from kubemedic.snapshot import loading  # noqa: PLC0415

    try:
        loaded = loading.load_snapshot(snapshot)
    except loading.SnapshotError as error:
        raise _fail(f"--snapshot: {error}") from None
    return loaded.view()


def _table(found: Sequence[Recommendation], *, console: Console) -> None:
    from kubemedic.model import durations  # noqa: PLC0415
    from kubemedic.recommend import rendering  # noqa: PLC0415

    table = plain_table(
        [
            "WORKLOAD",
            "CONTAINER",
            "CPU REQUEST",
            "CPU LIMIT",
            "MEMORY REQUEST",
            "MEMORY LIMIT",
            "HISTORY",
        ],
        caption=f"{len(found)} container(s); values as current -> recommended "
        "(? current not known)",
    )
    for rec in found:
        cells = [rendering.change_text(change) for change in rec.changes]
        history = f"{rec.samples} over {durations.short_duration(rec.span)}"
        table.add_row(
            archive_cli._cell(rec.workload.key),
            archive_cli._cell(rec.workload.container),
            *cells,
            history,
        )
    console.print(table)
    for rec in found:
        console.print()
        console.print(
            archive_cli._cell(f"{rec.workload.key} {rec.workload.container}:", "bold"),
            highlight=False,
        )
        if rec.current is not None and rec.current.source:
            console.print(archive_cli._cell(f"  current: {rec.current.source}"), highlight=False)
        for reason in rec.reasons:
            console.print(archive_cli._cell(f"  {reason.resource}: {reason.text}"), highlight=False)


def recommend(
    *,
    db: archive_cli.DbOption = None,
    cluster: archive_cli.ClusterOption = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only workloads in this namespace.")
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload", metavar="KIND/NAME", help="Only this workload (deployment/hub)."
        ),
    ] = None,
    since: archive_cli.SinceOption = None,
    until: archive_cli.UntilOption = None,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            help="Read the current requests and limits from this snapshot (file or directory) "
            "instead of the archive.",
        ),
    ] = None,
    cpu_percentile: Annotated[
        float, typer.Option("--cpu-percentile", help="CPU request at this percentile.")
    ] = 95.0,
    memory_buffer: Annotated[
        float, typer.Option("--memory-buffer", help="Percent added to the memory peak.")
    ] = 15.0,
    min_samples: Annotated[
        int, typer.Option("--min-samples", help="Fewer samples than this give no number.")
    ] = 30,
    min_history: Annotated[
        str,
        typer.Option("--min-history", help="Samples spanning less than this give no number."),
    ] = "30m",
    output: archive_cli.OutputOption = OutputFormat.table,
) -> None:
    """Recommend requests and limits per workload container from the archive's usage history."""
    chosen = _workload(workload)
    settings = _settings(
        percentile=cpu_percentile,
        buffer=memory_buffer,
        min_samples=min_samples,
        min_history=min_history,
    )
    flags = (archive_cli._moment("--since", since), archive_cli._moment("--until", until))
    view = _view(snapshot)
    from kubemedic.recommend import archived, current, rendering  # noqa: PLC0415

    specs = None if view is None else current.from_view(view, source=f"snapshot {snapshot}")

    with archive_cli._open(db) as archive:
        start, end = archive_cli._window(
            since, until, flags, archive_cli._archive_now(archive, cluster)
        )
        found = archived.recommend_from_archive(
            archive,
            cluster=cluster,
            namespace=namespace,
            workload=chosen,
            since=start,
            until=end,
            settings=settings,
            current=specs,
            view=view,
        )
        unknown = archive_cli._unknown_cluster(archive, cluster) if not found else ""
    if output is OutputFormat.json:
        archive_cli._write_json(
            {
                "settings": rendering.settings_json(settings),
                "recommendations": [rendering.recommendation_json(rec) for rec in found],
            }
        )
        return
    if not found:
        out_console().print(
            f"no usage samples match{unknown}: `kubemedic run` records them from metrics-server",
            highlight=False,
        )
        return
    _table(found, console=out_console())


def register(app: typer.Typer) -> None:
    """Add ``recommend`` to ``app``."""
    app.command("recommend")(recommend)
