"""``kubemedic sim serve|list|run``: the simulator, a Kubernetes API emulator for tests and the
demo. The simulator is imported when one of these commands runs, never before.

Every flag is checked before anything is built, and a bad one is exit 2 with one line naming the
flag and the range it takes: ``--speed`` from 0.01 to 10,000 (times real time), ``--until`` and
``--event-ttl`` from 0 to 30 days, ``--port`` from 0 to 65535, ``--history`` from 1 to
10,000,000, ``--clock-start`` from 1970 to 9000, each ``--fault`` by its own type and range
(rates from 0 to 1, seconds from 0 to 3600) and spelt as the flag spells it (``error-rate``), by
the emulator's one check of fault settings, which its ``PUT /kubemedic.io/v1/faults`` makes too.

``sim run`` exits 2 after a run whose scenario actions the simulated cluster refused (its outputs
written all the same), unless ``--allow-refused`` (see ``kubemedic.simulating``)."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from kubemedic.cli import _common
from kubemedic.model import timing
from kubemedic.model.durations import DurationError, parse_duration
from kubemedic.output import files

__all__ = ["register", "sim_app"]

sim_app = typer.Typer(
    name="sim",
    help="The simulator: a Kubernetes API emulator for tests and the demo.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``sim`` command group to ``app``."""
    app.add_typer(sim_app)


SPEED = (0.01, 10_000.0)
"""Slowest and fastest ``--speed`` (times real time)."""


def _parse_duration(flag: str, text: str) -> timedelta:
    """A flag's duration (``90s``, ``10m``, ``1h30m``, or bare seconds) from 0 to the longest a
    scenario's own durations may be (30 days), read by the one parser; exit 2 naming the flag
    otherwise."""
    from kubemedic.sim.scenarios import MAX_SECONDS  # noqa: PLC0415 - loaded when a command runs

    try:
        value = parse_duration(text, bare_seconds=True)
    except DurationError as error:
        raise _common._fail(f"{flag}: {error}") from None
    if value.total_seconds() > MAX_SECONDS:
        raise _common._fail(
            f"{flag}: expected a duration of at most {MAX_SECONDS // 86400}d, got {text!r}"
        )
    return value


def _check_speed(speed: float | None) -> None:
    low, high = SPEED
    if speed is not None and not (math.isfinite(speed) and low <= speed <= high):
        raise _common._fail(
            f"--speed: expected a number from {low:g} to {high:,.0f} (times real time), "
            f"got {speed:g}"
        )


def _check_whole(flag: str, value: int, *, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        most = f"{high:,}" if high >= 100_000 else str(high)
        raise _common._fail(f"{flag}: expected {what} from {low} to {most}, got {value}")


def _check_clock_start(text: str) -> None:
    """``snapshot``, ``now`` or an RFC 3339 time with a zone from 1970 to 2999."""
    if text in ("snapshot", "now"):
        return
    try:
        timing.parse_time_flag("--clock-start", text)
    except timing.TimeError as error:
        raise _common._fail(f"{error} (or 'snapshot' or 'now')") from None


def _check_outputs(force: bool, *outputs: tuple[str, Path | None]) -> None:
    """Refuse an output path that is not a file (see ``output.files``) before anything runs."""
    for flag, path in outputs:
        if path is None:
            continue
        try:
            files.check_target(path, flag=flag, force=force)
        except files.OutputError as error:
            raise _common._fail(str(error)) from None


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
        typer.Option(
            help="Changes kept for watches; older resourceVersions get 410 Gone.",
        ),
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
    force: _common.ForceOption = False,
) -> None:
    """Run the Kubernetes API emulator until interrupted."""
    import asyncio  # noqa: PLC0415

    from kubemedic.sim import apiserver  # noqa: PLC0415
    from kubemedic.snapshot import loading  # noqa: PLC0415

    err = _common.err_console()
    _check_speed(speed)
    _check_whole("--port", port, low=0, high=65535, what="a port")
    _check_whole("--history", history, low=1, high=10_000_000, what="a number of changes")
    _check_clock_start(clock_start)
    ttl = _parse_duration("--event-ttl", event_ttl)
    try:  # the one check of fault settings, also the emulator's over HTTP
        faults = apiserver.parse_assignments(fault or [])
    except apiserver.FaultError as error:
        raise _common._fail(str(error)) from None
    _check_outputs(force, ("--kubeconfig-out", kubeconfig_out))
    try:
        options = apiserver.ServeOptions(
            port=port,
            kubeconfig_out=kubeconfig_out,
            force=force,
            load=load,
            event_ttl=ttl,
            history=history,
            speed=speed,
            faults=faults,
            clock_start=clock_start,
        )
        server = apiserver.build_served(options)
    except (loading.SnapshotError, ValueError) as exc:
        raise _common._fail(str(exc)) from None

    def ready(running: apiserver.ApiServer) -> None:
        err.print(f"kubemedic API emulator listening on {running.url}", highlight=False)

    try:
        asyncio.run(apiserver.serve(server, options, ready=ready))
    except OSError as exc:
        raise _common._fail(f"--port {port}: cannot serve: {exc.strerror or exc}") from None


@sim_app.command("list")
def sim_list() -> None:
    """List the bundled scenarios."""
    from kubemedic import simulating  # noqa: PLC0415

    simulating.list_scenarios(console=_common.out_console())


_RUN_HELP = (
    "Run a scenario on the simulated cluster.\n\n"
    "The run always goes on to the scenario's end (or --until) and writes its outputs. If the "
    "cluster refused any of the scenario's actions (a patch of an object that does not exist, a "
    "manifest it finds invalid, a node selection that matches no node), the scenario did not "
    "happen as written: the command then exits 2 with one line naming the scenario file and "
    "each refused action (timeline entry, scenario time, what and why), unless --allow-refused."
)


@sim_app.command("run", help=_RUN_HELP)
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
    clouds_out: Annotated[
        Path | None,
        typer.Option(
            "--clouds-out",
            help="With --serve: write a clouds.yaml here for the simulated OpenStack "
            "cloud (cloud kubemedic-sim: Keystone and Nova over the cluster's machines).",
        ),
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
    allow_refused: Annotated[
        bool,
        typer.Option(
            "--allow-refused",
            help="Exit 0 even if the simulated cluster refused some of the scenario's actions "
            "(they are listed in a warning on stderr instead of an error).",
        ),
    ] = False,
    git_out: Annotated[
        Path | None,
        typer.Option(
            "--git-out",
            help="For a scenario with a gitops block: write its Git repository here (a new or "
            "empty directory), one commit per push of the story; the Argo CD Application "
            "points at it.",
        ),
    ] = None,
    git: Annotated[
        Path | None,
        typer.Option(
            "--git",
            help="For a scenario with a gitops block: sync from this existing Git repository "
            "instead (nothing is written to it).",
        ),
    ] = None,
    force: _common.ForceOption = False,
) -> None:
    """Run a scenario on the simulated cluster (see ``_RUN_HELP``)."""
    from kubemedic import simulating  # noqa: PLC0415
    from kubemedic.sim import scenarios  # noqa: PLC0415

    err = _common.err_console()
    _check_speed(speed)
    _check_whole("--port", port, low=0, high=65535, what="a port")
    if (kubeconfig_out is not None or clouds_out is not None or hold) and not serve:
        raise _common._fail("--kubeconfig-out, --clouds-out and --hold need --serve")
    # Refused before the run, not after a minute of it.
    _check_outputs(
        force,
        ("--kubeconfig-out", kubeconfig_out),
        ("--clouds-out", clouds_out),
        ("--snapshot-out", snapshot_out),
    )
    options = simulating.RunOptions(
        scenario=scenario,
        speed=speed,
        until=_parse_duration("--until", until) if until is not None else None,
        serve=serve,
        port=port,
        kubeconfig_out=kubeconfig_out,
        clouds_out=clouds_out,
        snapshot_out=snapshot_out,
        force=force,
        hold=hold,
        seed=seed,
        allow_refused=allow_refused,
        git_out=git_out,
        git=git,
    )
    try:
        simulating.run_scenario(
            options, console=_common.out_console(), err=err, progress=_common.progress(err)
        )
    except (scenarios.ScenarioError, simulating.RefusedError, simulating.GitOpsFlagError) as exc:
        raise _common._fail(str(exc)) from None
    except OSError as exc:
        raise _common._fail(str(exc)) from None
