"""``kubemedic scan`` and ``kubemedic checks``: judge a cluster once, and the checks that judge.

``scan`` reads a snapshot (``--snapshot``) or the live cluster of a kubeconfig, as kubectl finds
it: ``read_cluster`` resolves the kubeconfig, checks the server answers, lists what the checks
read and closes the connection; every failure is a ``KubeAccessError`` whose message names the
file, context or server at fault (printed, exit 2).

Only what the command needs is imported when it runs (a snapshot scan never loads the
Kubernetes client); on a terminal, reading and checking show their progress on stderr.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kubemedic.cli._common import OutputFormat, _fail, leave_at_once, out_console, progress

if TYPE_CHECKING:
    from kubemedic import config as configuration
    from kubemedic.checks.findings import Finding
    from kubemedic.kube.config import Resolved
    from kubemedic.kube.livescan import LiveSnapshot
    from kubemedic.model.view import ClusterView
    from kubemedic.output.progress import Task
    from kubemedic.snapshot.loading import LoadedSnapshot

__all__ = ["FailOn", "LiveScan", "exit_code", "list_checks", "read_cluster", "register", "scan"]


class FailOn(enum.StrEnum):
    critical = "critical"
    warning = "warning"
    info = "info"
    never = "never"


def register(app: typer.Typer) -> None:
    """Add ``scan`` and ``checks`` to ``app``."""
    app.command(name="scan")(scan)
    app.command(name="checks")(list_checks)


def _parse_at(text: str | None) -> datetime | None:
    """``--at``: an RFC 3339 time with a zone, from 1970 to 2999 (``timing.parse_time_flag``)."""
    if text is None:
        return None
    from kubemedic.model import timing  # noqa: PLC0415 - loaded when a command runs

    try:
        return timing.parse_time_flag("--at", text)
    except timing.TimeError as error:
        raise _fail(str(error)) from None


def exit_code(findings: list[Finding], fail_on: FailOn) -> int:
    """0 when no finding is at or above ``fail_on``, else 1."""
    from kubemedic.checks.findings import Severity  # noqa: PLC0415

    if fail_on is FailOn.never:
        return 0
    threshold = Severity.parse(fail_on.value)
    return 1 if any(finding.severity >= threshold for finding in findings) else 0


def _chosen_checks(only: list[str] | None, skip: list[str] | None) -> list[str]:
    from kubemedic import checks  # noqa: PLC0415 - registers every check

    known = list(checks.REGISTRY)
    for name in [*(only or []), *(skip or [])]:
        if name not in checks.REGISTRY:
            raise _fail(f"--check/--skip-check {name!r}: unknown check; known: {', '.join(known)}")
    chosen = list(only) if only else known
    return [name for name in chosen if name not in set(skip or [])]


def scan(
    *,
    snapshot: Annotated[
        str | None,
        typer.Option(
            "--snapshot",
            "-s",
            help="A file or directory of `kubectl get -o json|yaml` output (.json, .yaml, .gz).",
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="Accept a snapshot that holds no objects at all (only empty lists).",
        ),
    ] = False,
    at: Annotated[
        str | None,
        typer.Option(help="Judge the snapshot as of this RFC 3339 time (default: its newest)."),
    ] = None,
    output: Annotated[OutputFormat, typer.Option("--output", "-o")] = OutputFormat.table,
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 when a finding is at or above this severity.")
    ] = FailOn.warning,
    check: Annotated[
        list[str] | None, typer.Option("--check", help="Run only this check (repeatable).")
    ] = None,
    skip_check: Annotated[
        list[str] | None, typer.Option("--skip-check", help="Do not run this check (repeatable).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML file of check thresholds and selectors."),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            min=0, help="Table rows per check and severity; the rest are counted (0: all)."
        ),
    ] = 20,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(
            "--kubeconfig",
            help="Scan the live cluster of this kubeconfig file (default: KUBECONFIG, "
            "~/.kube/config, or the in-cluster service account).",
        ),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option("--context", help="The kubeconfig context to use (default: current)."),
    ] = None,
) -> None:
    """Scan a cluster once and report every risk found: the live cluster of the kubeconfig
    (as kubectl finds it), or a snapshot with --snapshot."""
    if snapshot is not None and (kubeconfig is not None or context is not None):
        raise _fail("--snapshot reads files; it cannot be combined with --kubeconfig/--context")
    if snapshot is not None and not snapshot:
        raise _fail("--snapshot '': expected a snapshot file or directory")
    from kubemedic import checks  # noqa: PLC0415 - what a scan needs, loaded when it runs
    from kubemedic.model import objects  # noqa: PLC0415
    from kubemedic.output import rendering  # noqa: PLC0415

    settings = _settings(config)
    names = [n for n in _chosen_checks(check, skip_check) if n not in settings.disabled]
    when = _parse_at(at)
    shown = progress()
    reading = f"reading {snapshot}" if snapshot is not None else "reading the live cluster"
    with shown.task(reading) as task:
        if snapshot is not None:
            drawn = task if shown.active else None
            view, title, notes = _snapshot_view(
                Path(snapshot), at=when, task=drawn, allow_empty=allow_empty
            )
        else:
            view, title, notes = _live_view(kubeconfig, context, at=when)
        order = {name: number for number, name in enumerate(names, 1)}

        def running(name: str) -> None:
            task.phase(f"checking: {name} ({order[name]} of {len(order)})")

        findings = checks.run_checks(
            view,
            names=names,
            configs=settings.configs,
            progress=running if shown.active else None,
        )
        document = None
        if output is OutputFormat.json:
            task.phase(f"writing {len(findings):,} finding(s) as JSON")
            document = rendering.render_json(findings, generated_at=datetime.now(UTC))
    if document is not None:
        sys.stdout.buffer.write(document)
        sys.stdout.flush()
    else:
        rendering.render_table(
            findings,
            console=out_console(),
            title=f"{title} as of {objects.format_time(view.now)}",
            notes=notes,
            per_check=limit,
        )
    leave_at_once()  # everything is printed; freeing the snapshot object by object is not needed
    raise typer.Exit(exit_code(findings, fail_on))


def _snapshot_view(
    snapshot: Path, *, at: datetime | None, task: Task | None, allow_empty: bool = False
) -> tuple[ClusterView, str, list[str]]:
    from kubemedic.snapshot import loading  # noqa: PLC0415

    try:
        loaded = loading.load_snapshot(
            snapshot,
            allow_empty=allow_empty,
            progress=task.update if task is not None else None,
        )
    except loading.EmptySnapshotError as error:
        raise _fail(f"{error}; --allow-empty scans an empty snapshot") from None
    except loading.SnapshotError as error:
        raise _fail(str(error)) from None
    if task is not None:
        task.phase(f"building the view of {len(loaded.bodies):,} objects")
    view = loaded.view(at=at)
    return view, f"kubemedic scan of {snapshot}", _notes(loaded)


@dataclass(frozen=True, slots=True)
class LiveScan:
    resolved: Resolved
    snapshot: LiveSnapshot


def read_cluster(
    kubeconfig_path: Path | None, context: str | None, *, timeout: float = 10.0
) -> LiveScan:
    """Resolve, connect, probe and list once (blocking)."""
    import asyncio  # noqa: PLC0415

    from kubemedic.kube import config as kubeconfig  # noqa: PLC0415 - only a live scan needs it

    resolved = kubeconfig.resolve(kubeconfig_path, context)
    return asyncio.run(_read(resolved, timeout=timeout))


async def _read(resolved: Resolved, *, timeout: float) -> LiveScan:
    from kubemedic.kube import config as kubeconfig  # noqa: PLC0415
    from kubemedic.kube import livescan  # noqa: PLC0415

    api = kubeconfig.connect(resolved, timeout=timeout)
    try:
        await kubeconfig.probe(api, resolved, timeout=timeout)
        return LiveScan(resolved, await livescan.fetch(api))
    finally:
        await api.close()


def _live_view(
    kubeconfig: Path | None, context: str | None, *, at: datetime | None
) -> tuple[ClusterView, str, list[str]]:
    from kubemedic.kube.config import KubeAccessError  # noqa: PLC0415

    try:
        scanned = read_cluster(kubeconfig, context)
    except KubeAccessError as error:
        raise _fail(str(error)) from None
    resolved, fetched = scanned.resolved, scanned.snapshot
    title = f"kubemedic scan of context {resolved.context} ({resolved.server})"
    read = f"{len(fetched.bodies)} objects listed from {resolved.server} (from {resolved.source})."
    notes = [read, *fetched.notes, *_workload_notes(fetched.bodies, live=True)]
    return fetched.view(at=at), title, notes


def _settings(path: Path | None) -> configuration.Settings:
    from kubemedic import config as configuration  # noqa: PLC0415 - pydantic, when it runs

    if path is None:
        return configuration.Settings()
    try:
        return configuration.load_settings(path)
    except configuration.ConfigError as error:
        raise _fail(f"--config {error}") from None


_MANAGED_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


def _notes(loaded: LoadedSnapshot) -> list[str]:
    notes = [f"{len(loaded.bodies)} objects read from {len(loaded.files)} file(s)."]
    if loaded.unknown_kinds:
        counted = ", ".join(f"{n} {k}" for k, n in sorted(loaded.unknown_kinds.items()))
        notes.append(f"Ignored (kinds kubemedic does not use): {counted}.")
    notes.extend(_workload_notes(loaded.bodies))
    if loaded.skipped_files:
        notes.append(f"Skipped {len(loaded.skipped_files)} file(s) that are not JSON or YAML.")
    return notes


def _workload_notes(bodies: list[dict[str, Any]], *, live: bool = False) -> list[str]:
    from kubemedic.model import objects  # noqa: PLC0415

    workloads = [b for b in bodies if b.get("kind") in _MANAGED_KINDS]
    bare = sum(1 for b in workloads if not objects.get_list(b, "metadata", "managedFields"))
    if not bare:
        return []
    hint = "" if live else " (dump with kubectl get --show-managed-fields)"
    return [
        f"{bare} of {len(workloads)} workloads carry no managedFields, so out-of-band edits "
        f"cannot be seen on them{hint}."
    ]


def list_checks(
    name: Annotated[
        str | None,
        typer.Argument(help="Explain this check: what it finds, its evidence and settings."),
    ] = None,
) -> None:
    """List the checks kubemedic runs, or explain one."""
    from kubemedic.checks import registry  # noqa: PLC0415 - the package registers every check

    if name is not None:
        spec = registry.REGISTRY.get(name)
        if spec is None:
            raise _fail(f"unknown check {name!r}; known: {', '.join(sorted(registry.REGISTRY))}")
        typer.echo(registry.explain(spec))
        return
    from rich.table import Table  # noqa: PLC0415

    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("Check", no_wrap=True, style="bold")
    table.add_column("What it finds")
    for check_name, spec in sorted(registry.REGISTRY.items()):
        table.add_row(check_name, spec.summary)
    out_console().print(table)
