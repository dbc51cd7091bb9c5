"""``kubemedic sim serve|list|run``: the simulator, a Kubernetes API emulator for tests and the
demo. The simulator is imported when one of these commands runs, never before."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from kubemedic.cli import _common
from kubemedic.model.durations import DurationError, parse_duration

__all__ = ["register", "sim_app"]

sim_app = typer.Typer(
    name="sim",
    help="The simulator: a Kubernetes API emulator for tests and the demo.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``sim`` command group to ``app``."""
    app.add_typer(sim_app)


def _parse_duration(flag: str, text: str) -> timedelta:
    """A flag's duration (``90s``, ``10m``, ``1h30m``, or bare seconds), read by the one parser;
    exit 2 naming the flag otherwise."""
    try:
        return parse_duration(text, bare_seconds=True)
    except DurationError as error:
        raise _common._fail(f"{flag}: {error}") from None


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

    from kubemedic.sim import apiserver  # noqa: PLC0415
    from kubemedic.snapshot import loading  # noqa: PLC0415

    err = _common.err_console()
    try:
        options = apiserver.ServeOptions(
            port=port,
            kubeconfig_out=kubeconfig_out,
            load=load,
            event_ttl=_parse_duration("--event-ttl", event_ttl),
            history=history,
            speed=speed,
            faults=apiserver.parse_assignments(fault or []),
            clock_start=clock_start,
        )
        if speed <= 0:
            raise ValueError(f"--speed must be positive, got {speed}")
        server = apiserver.build_served(options)
    except (loading.SnapshotError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None

    def ready(running: apiserver.ApiServer) -> None:
        err.print(f"kubemedic API emulator listening on {running.url}", highlight=False)

    try:
        asyncio.run(apiserver.serve(server, options, ready=ready))
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot serve on port {port}: {exc}", highlight=False)
        raise typer.Exit(2) from None


@sim_app.command("list")
def sim_list() -> None:
    """List the bundled scenarios."""
    from kubemedic import simulating  # noqa: PLC0415

    simulating.list_scenarios(console=_common.out_console())


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
    from kubemedic.sim import scenarios  # noqa: PLC0415

    err = _common.err_console()
    if speed is not None and speed <= 0:
        err.print(f"[red]error:[/red] --speed must be positive, got {speed}", highlight=False)
        raise typer.Exit(2)
    if (kubeconfig_out is not None or hold) and not serve:
        err.print("[red]error:[/red] --kubeconfig-out and --hold need --serve", highlight=False)
        raise typer.Exit(2)
    options = simulating.RunOptions(
        scenario=scenario,
        speed=speed,
        until=_parse_duration("--until", until) if until is not None else None,
        serve=serve,
        port=port,
        kubeconfig_out=kubeconfig_out,
        snapshot_out=snapshot_out,
        hold=hold,
        seed=seed,
    )
    try:
        simulating.run_scenario(
            options, console=_common.out_console(), err=err, progress=_common.progress(err)
        )
    except scenarios.ScenarioError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
    except OSError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from None
