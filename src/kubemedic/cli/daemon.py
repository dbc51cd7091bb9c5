"""``kubemedic run``: the recording and scanning daemon."""

from __future__ import annotations

import contextlib
import signal
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli._common import (
    ContextOption,
    KubeconfigOption,
    _fail,
    configure_logging,
    listen_address,
)
from kubemedic.errors import InputError
from kubemedic.model.durations import DurationError, parse_duration

if TYPE_CHECKING:
    from kubemedic.run.daemon import Daemon

__all__ = ["register"]


MIN_INTERVAL = timedelta(seconds=1)
"""The shortest --scan-interval and --metrics-interval (cluster time): a shorter one would keep
the daemon scanning or polling without pause."""


class ClockChoice(StrEnum):
    wall = "wall"
    server = "server"


def register(app: typer.Typer) -> None:
    app.command(name="run")(run)
    group = typer.Typer(
        name="config", help="The configuration file: its defaults.", no_args_is_help=True
    )
    group.command(name="show-defaults")(show_defaults)
    app.add_typer(group)


def show_defaults() -> None:
    """Print the repair:, agent:, breaker:, drift:, guard: and notify: sections with every
    default (the checks' defaults: `kubemedic checks NAME`)."""
    from kubemedic.agent import settings as agent_settings  # noqa: PLC0415
    from kubemedic.breaker import settings as breaker_settings  # noqa: PLC0415
    from kubemedic.drift import settings as drift_settings  # noqa: PLC0415
    from kubemedic.guard import settings as guard_settings  # noqa: PLC0415
    from kubemedic.notify import settings as notify_settings  # noqa: PLC0415
    from kubemedic.repair import settings as repair_settings  # noqa: PLC0415

    typer.echo(repair_settings.defaults_text(), nl=False)
    typer.echo(agent_settings.defaults_text(), nl=False)
    typer.echo(breaker_settings.defaults_text(), nl=False)
    typer.echo(drift_settings.defaults_text(), nl=False)
    typer.echo(guard_settings.defaults_text(), nl=False)
    typer.echo(notify_settings.defaults_text(), nl=False)


def run(
    *,
    db: Annotated[
        str | None,
        typer.Option(
            help="Archive URL: a SQLite file path, sqlite:///f.db or postgresql://... "
            "(default: $KUBEMEDIC_DB or kubemedic.db)."
        ),
    ] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    cluster: Annotated[
        str | None, typer.Option(help="Name recorded for this cluster (default: the context's).")
    ] = None,
    clock: Annotated[
        ClockChoice,
        typer.Option(help="Whose time to follow: this machine's, or the API server's."),
    ] = ClockChoice.wall,
    scan_interval: Annotated[
        str, typer.Option(help="Cluster time between scans (90s, 5m, 1h).")
    ] = "60s",
    metrics_interval: Annotated[
        str, typer.Option(help="Cluster time between metrics.k8s.io samples.")
    ] = "60s",
    retain: Annotated[
        str | None,
        typer.Option(help="Delete archived rows older than this (30d); default: keep all."),
    ] = None,
    leader_elect: Annotated[
        bool,
        typer.Option(help="Take a Lease first, so only one of several replicas records."),
    ] = True,
    lease_namespace: Annotated[str, typer.Option(help="Namespace of the Lease.")] = "default",
    lease_name: Annotated[str, typer.Option(help="Name of the Lease.")] = "kubemedic",
    identity: Annotated[
        str | None, typer.Option(help="This replica's identity in the Lease (default: host_uid).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    listen: Annotated[
        str,
        typer.Option(
            help="HOST:PORT to serve /metrics (Prometheus), /healthz and /readyz on (port 0: any "
            "free port, logged)."
        ),
    ] = "0.0.0.0:9808",
    web: Annotated[
        str | None,
        typer.Option(
            help="HOST:PORT to serve the dashboard on, read-only over the archive being "
            "recorded (as `kubemedic web`; beyond loopback only with --web-token-file; port 0: "
            "any free port, logged).",
        ),
    ] = None,
    web_token_file: Annotated[
        Path | None,
        typer.Option(
            "--web-token-file",
            help="File whose first line is the token every dashboard request must carry.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="YAML file of check thresholds, the repair:, breaker: and notify: sections (node "
            "repair, the storm breaker and notifications run only when theirs is there; "
            "`kubemedic config show-defaults` prints the defaults).",
        ),
    ] = None,
) -> None:
    """Record every event, OOM kill, eviction and node transition into the archive, and scan
    the cluster on a schedule; runs until interrupted."""
    import asyncio  # noqa: PLC0415 - loaded when it runs

    from kubemedic import config as configuration  # noqa: PLC0415
    from kubemedic.breaker import settings as breaker_settings  # noqa: PLC0415
    from kubemedic.drift import settings as drift_settings  # noqa: PLC0415
    from kubemedic.kube.config import KubeAccessError  # noqa: PLC0415
    from kubemedic.notify import settings as notify_settings  # noqa: PLC0415
    from kubemedic.repair import settings as repair_settings  # noqa: PLC0415
    from kubemedic.repair.providers.base import ProviderError  # noqa: PLC0415
    from kubemedic.run.daemon import Daemon, DaemonOptions  # noqa: PLC0415
    from kubemedic.store.db import ArchiveError, database_url  # noqa: PLC0415

    def duration(flag: str, text: str, *, least: timedelta = MIN_INTERVAL) -> timedelta:
        try:
            value = parse_duration(text, zero=False)
        except DurationError as error:
            raise _fail(f"{flag}: {error}") from None
        if value < least:
            shown = (
                f"{least.total_seconds() / 3600:g}h"
                if least >= timedelta(hours=1)
                else (f"{least.total_seconds():g}s")
            )
            raise _fail(f"{flag}: expected a duration of at least {shown}, got {text!r}")
        return value

    address = listen_address(listen, example="0.0.0.0:9808")
    dashboard, web_token = _dashboard(web, web_token_file)
    configure_logging(log_level, quiet=("alembic",))  # a line per migration step
    try:
        url = database_url(db)
    except ArchiveError as error:
        raise _fail(f"--db: {error}") from None
    settings = configuration.Settings()
    repair = breaker = rules = notify = None
    if config is not None:
        try:
            settings = configuration.load_settings(config)
            if settings.repair is not None:
                repair = repair_settings.load(settings)
            breaker = breaker_settings.load(settings)
            notify = notify_settings.load(settings)
            if settings.drift is not None:
                rules = drift_settings.load(settings)
        except configuration.ConfigError as error:
            raise _fail(f"--config {error}") from None
    options = DaemonOptions(
        db_url=url,
        kubeconfig=kubeconfig,
        context=context,
        cluster=cluster,
        clock=clock.value,
        scan_interval=duration("--scan-interval", scan_interval).total_seconds(),
        metrics_interval=duration("--metrics-interval", metrics_interval).total_seconds(),
        retain=duration("--retain", retain, least=timedelta(hours=1)) if retain else None,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        lease_name=lease_name,
        identity=identity or "",
        check_configs=settings.configs,
        check_names=None,
        repair=repair,
        breaker=breaker,
        drift_rules=rules,
        notify=notify,
        listen=address,
        web=dashboard,
        web_token=web_token,
    )
    try:
        asyncio.run(_serve(Daemon(options)))
    except (KubeAccessError, ArchiveError, ProviderError, InputError) as error:
        raise _fail(str(error)) from None
    except ExceptionGroup as group:  # a task group's failure: report its first input error
        first = next(iter(_leaves(group)), None)
        if isinstance(first, InputError):
            raise _fail(str(first)) from None
        raise


def _dashboard(
    web: str | None, token_file: Path | None
) -> tuple[tuple[str, int] | None, str | None]:
    """``--web`` and ``--web-token-file`` checked as `kubemedic web` checks its flags (exit 2
    naming the flag); the web stack itself is loaded only when the daemon serves it."""
    if web is None:
        if token_file is not None:
            raise _fail("--web-token-file: the dashboard's token needs --web HOST:PORT")
        return None, None
    from kubemedic.web import serving  # noqa: PLC0415 - only with --web

    host, port = listen_address(web, example="127.0.0.1:8080", flag="--web")
    try:
        token = (
            None if token_file is None else serving.read_token(token_file, flag="--web-token-file")
        )
        serving.check_listen(
            host,
            token,
            flag="--web",
            file_flag="--web-token-file",
            example=f"--web 127.0.0.1:{port}",
        )
    except serving.WebError as error:
        raise _fail(str(error)) from None
    return (host, port), token


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


async def _serve(daemon: Daemon) -> None:
    import asyncio  # noqa: PLC0415

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await daemon.run(stop)
