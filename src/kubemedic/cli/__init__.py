"""The ``kubemedic`` command line.

Exit codes everywhere: 0 when nothing is at or above ``--fail-on``, 1 when something is, 2 for a
usage or input error (the message names the file, object or flag at fault).
"""

from __future__ import annotations

import enum
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kubemedic import checks
from kubemedic import config as configuration
from kubemedic import demo as demo_module
from kubemedic._version import __version__
from kubemedic.checks import registry
from kubemedic.checks.findings import Finding, Severity
from kubemedic.model import objects
from kubemedic.model.view import ClusterView
from kubemedic.output import rendering
from kubemedic.snapshot import loading

__all__ = ["app", "main"]

app = typer.Typer(
    name="kubemedic",
    help="Keeps Kubernetes clusters healthy and remembers what went wrong.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"


class FailOn(enum.StrEnum):
    critical = "critical"
    warning = "warning"
    info = "info"
    never = "never"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kubemedic {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Keeps Kubernetes clusters healthy and remembers what went wrong."""


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def _parse_at(text: str | None) -> datetime | None:
    if text is None:
        return None
    parsed = objects.parse_time(text)
    if parsed is None:
        raise _fail(f"--at {text!r}: expected an RFC 3339 time such as 2023-02-01T20:00:00Z")
    return parsed


def exit_code(findings: list[Finding], fail_on: FailOn) -> int:
    """0 when no finding is at or above ``fail_on``, else 1."""
    if fail_on is FailOn.never:
        return 0
    threshold = Severity.parse(fail_on.value)
    return 1 if any(finding.severity >= threshold for finding in findings) else 0


def _chosen_checks(only: list[str] | None, skip: list[str] | None) -> list[str]:
    known = list(checks.REGISTRY)
    for name in [*(only or []), *(skip or [])]:
        if name not in checks.REGISTRY:
            raise _fail(f"--check/--skip-check {name!r}: unknown check; known: {', '.join(known)}")
    chosen = list(only) if only else known
    return [name for name in chosen if name not in set(skip or [])]


@app.command()
def scan(
    *,
    snapshot: Annotated[
        Path | None,
        typer.Option(
            "--snapshot",
            "-s",
            help="A file or directory of `kubectl get -o json|yaml` output (.json, .yaml, .gz).",
        ),
    ] = None,
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
    settings = _settings(config)
    names = [n for n in _chosen_checks(check, skip_check) if n not in settings.disabled]
    when = _parse_at(at)
    if snapshot is not None:
        try:
            loaded = loading.load_snapshot(snapshot)
        except loading.SnapshotError as error:
            raise _fail(str(error)) from None
        view = loaded.view(at=when)
        title = f"kubemedic scan of {snapshot}"
        notes = _notes(loaded)
    else:
        view, title, notes = _live_view(kubeconfig, context, at=when)
    findings = checks.run_checks(view, names=names, configs=settings.configs)
    if output is OutputFormat.json:
        sys.stdout.buffer.write(rendering.render_json(findings, generated_at=datetime.now(UTC)))
        sys.stdout.flush()
    else:
        rendering.render_table(
            findings,
            console=Console(),
            title=f"{title} as of {objects.format_time(view.now)}",
            notes=notes,
            per_check=limit,
        )
    raise typer.Exit(exit_code(findings, fail_on))


def _live_view(
    kubeconfig: Path | None, context: str | None, *, at: datetime | None
) -> tuple[ClusterView, str, list[str]]:
    from kubemedic.cli import live  # noqa: PLC0415 - registered after this module loads
    from kubemedic.kube.config import KubeAccessError  # noqa: PLC0415

    try:
        scanned = live.read_cluster(kubeconfig, context)
    except KubeAccessError as error:
        raise _fail(str(error)) from None
    resolved, fetched = scanned.resolved, scanned.snapshot
    title = f"kubemedic scan of context {resolved.context} ({resolved.server})"
    read = f"{len(fetched.bodies)} objects listed from {resolved.server} (from {resolved.source})."
    notes = [read, *fetched.notes, *_workload_notes(fetched.bodies, live=True)]
    return fetched.view(at=at), title, notes


def _settings(path: Path | None) -> configuration.Settings:
    if path is None:
        return configuration.Settings()
    try:
        return configuration.load_settings(path)
    except configuration.ConfigError as error:
        raise _fail(f"--config {error}") from None


_MANAGED_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"})


def _notes(loaded: loading.LoadedSnapshot) -> list[str]:
    notes = [f"{len(loaded.bodies)} objects read from {len(loaded.files)} file(s)."]
    if loaded.unknown_kinds:
        counted = ", ".join(f"{n} {k}" for k, n in sorted(loaded.unknown_kinds.items()))
        notes.append(f"Ignored (kinds kubemedic does not use): {counted}.")
    notes.extend(_workload_notes(loaded.bodies))
    if loaded.skipped_files:
        notes.append(f"Skipped {len(loaded.skipped_files)} file(s) that are not JSON or YAML.")
    return notes


def _workload_notes(bodies: list[dict[str, Any]], *, live: bool = False) -> list[str]:
    workloads = [b for b in bodies if b.get("kind") in _MANAGED_KINDS]
    bare = sum(1 for b in workloads if not objects.get_list(b, "metadata", "managedFields"))
    if not bare:
        return []
    hint = "" if live else " (dump with kubectl get --show-managed-fields)"
    return [
        f"{bare} of {len(workloads)} workloads carry no managedFields, so out-of-band edits "
        f"cannot be seen on them{hint}."
    ]


@app.command(name="checks")
def list_checks(
    name: Annotated[
        str | None,
        typer.Argument(help="Explain this check: what it finds, its evidence and settings."),
    ] = None,
) -> None:
    """List the checks kubemedic runs, or explain one."""
    console = Console()
    if name is not None:
        spec = registry.REGISTRY.get(name)
        if spec is None:
            raise _fail(f"unknown check {name!r}; known: {', '.join(sorted(registry.REGISTRY))}")
        typer.echo(registry.explain(spec))
        return
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("Check", no_wrap=True, style="bold")
    table.add_column("What it finds")
    for check_name, spec in sorted(registry.REGISTRY.items()):
        table.add_row(check_name, spec.summary)
    console.print(table)


sim_app = typer.Typer(
    name="sim",
    help="The simulator: a Kubernetes API emulator for tests and the demo.",
    no_args_is_help=True,
)
app.add_typer(sim_app)


def _parse_duration(text: str) -> timedelta:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        if text and text[-1] in units:
            return timedelta(seconds=float(text[:-1]) * units[text[-1]])
        return timedelta(seconds=float(text))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a duration such as 90s, 10m or 1h") from None


@sim_app.command("serve")
def sim_serve(
    *,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 picks a free one).")] = 0,
    kubeconfig_out: Annotated[
        Path | None,
        typer.Option("--kubeconfig-out", help="Write a kubeconfig here once the server is ready."),
    ] = None,
    load: Annotated[
        Path | None,
        typer.Option("--load", help="Pre-load objects from a snapshot file or directory."),
    ] = None,
    event_ttl: Annotated[
        str, typer.Option("--event-ttl", help="Events expire this long after their last write.")
    ] = "1h",
    history: Annotated[
        int,
        typer.Option(help="Changes kept for watches; older resourceVersions get 410 Gone."),
    ] = 100_000,
    speed: Annotated[float, typer.Option(help="Virtual clock speed (x real time).")] = 1.0,
    clock_start: Annotated[
        str,
        typer.Option(
            "--clock-start",
            help="Where virtual time starts: 'snapshot' (the newest time in --load), 'now', or "
            "an RFC 3339 time.",
        ),
    ] = "snapshot",
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            help="Fault injection NAME=VALUE, e.g. error-rate=0.1, throttle-rate=0.05, "
            "watch-drop-after=100, watch-stall=true, latency=0.2 (repeatable).",
        ),
    ] = None,
) -> None:
    """Run the Kubernetes API emulator until interrupted."""
    import asyncio  # noqa: PLC0415

    from kubemedic.sim.apiserver import server as apiserver  # noqa: PLC0415
    from kubemedic.sim.apiserver import serving  # noqa: PLC0415
    from kubemedic.sim.apiserver.http import faults as faults_module  # noqa: PLC0415

    err = Console(stderr=True)
    try:
        options = serving.ServeOptions(
            port=port,
            kubeconfig_out=kubeconfig_out,
            load=load,
            event_ttl=_parse_duration(event_ttl),
            history=history,
            speed=speed,
            faults=faults_module.parse_assignments(fault or []),
            clock_start=clock_start,
        )
        if speed <= 0:
            raise ValueError(f"--speed must be positive, got {speed}")
        server = serving.build(options)
    except (loading.SnapshotError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None

    def ready(running: apiserver.ApiServer) -> None:
        err.print(f"kubemedic API emulator listening on {running.url}", highlight=False)

    try:
        asyncio.run(serving.serve(server, options, ready=ready))
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot serve on port {port}: {exc}", highlight=False)
        raise typer.Exit(2) from None


@sim_app.command("list")
def sim_list() -> None:
    """List the bundled scenarios."""
    from kubemedic import simulating  # noqa: PLC0415

    simulating.list_scenarios(console=Console())


@sim_app.command("run")
def sim_run(
    scenario: Annotated[
        str, typer.Argument(help="A bundled scenario's name (see `sim list`) or a YAML file.")
    ],
    *,
    speed: Annotated[
        float | None,
        typer.Option(
            help="Pace cluster time at this many times real time (default: as fast "
            "as possible; 10 with --serve)."
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            help="Stop after this much cluster time (e.g. 90m) instead of the "
            "scenario's own duration."
        ),
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Serve the cluster's API on 127.0.0.1 while it runs.")
    ] = False,
    port: Annotated[int, typer.Option(help="Port for --serve (0 picks a free one).")] = 0,
    kubeconfig_out: Annotated[
        Path | None,
        typer.Option("--kubeconfig-out", help="With --serve: write a kubeconfig here."),
    ] = None,
    snapshot_out: Annotated[
        Path | None,
        typer.Option(
            "--snapshot-out",
            help="Write a `kubectl get -o json` style snapshot at "
            "the end (for `kubemedic scan --snapshot`); .gz compresses it.",
        ),
    ] = None,
    hold: Annotated[
        bool, typer.Option("--hold", help="With --serve: keep serving after the scenario ends.")
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option(help="Seed for the simulation's randomness (default: the scenario's)."),
    ] = None,
) -> None:
    """Run a scenario on the simulated cluster."""
    from kubemedic import simulating  # noqa: PLC0415
    from kubemedic.sim.scenarios import loading as scenarios  # noqa: PLC0415

    err = Console(stderr=True)
    if speed is not None and speed <= 0:
        err.print(f"[red]error:[/red] --speed must be positive, got {speed}", highlight=False)
        raise typer.Exit(2)
    if (kubeconfig_out is not None or hold) and not serve:
        err.print("[red]error:[/red] --kubeconfig-out and --hold need --serve", highlight=False)
        raise typer.Exit(2)
    options = simulating.RunOptions(
        scenario=scenario,
        speed=speed,
        until=_parse_duration(until) if until is not None else None,
        serve=serve,
        port=port,
        kubeconfig_out=kubeconfig_out,
        snapshot_out=snapshot_out,
        hold=hold,
        seed=seed,
    )
    try:
        simulating.run_scenario(options, console=Console(), err=err)
    except scenarios.ScenarioError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    except OSError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None


@app.command()
def demo(
    *,
    snapshots: Annotated[
        bool,
        typer.Option(
            "--snapshots", help="Scan the bundled snapshots instead of replaying the scenarios."
        ),
    ] = False,
    archive: Annotated[
        Path | None,
        typer.Option(
            help="Keep the archive `kubemedic run` records during the demo in this SQLite file."
        ),
    ] = None,
) -> None:
    """Replay the three incidents (and a healthy control) on the simulated cluster and scan
    what each leaves behind; the memory incident is recorded by `kubemedic run` over HTTP and
    asked of the archive two hours later, when the API server has forgotten it."""
    if archive is not None and archive.exists():
        raise _fail(f"--archive {archive}: the file exists; the demo records into a new one")
    demo_module.run(
        console=Console(), snapshots=snapshots, err=Console(stderr=True), archive=archive
    )


def _register_commands() -> None:
    from kubemedic.cli import archive, daemon, incidents, live  # noqa: PLC0415 - they import us

    for module in (archive, daemon, incidents, live):
        module.register(app)


_register_commands()


def main() -> None:
    app()
