"""``kubemedic sim serve``: run the API emulator until SIGINT or SIGTERM.

The kubeconfig is written only once the port is bound and the server answers, so a script can
wait for the file to appear and then use it (``kubectl --kubeconfig FILE get nodes``). The file
is written atomically (a temporary file renamed into place), so a reader never sees half of it.

What the process holds once loaded (the schema definitions, a snapshot's objects) lives until it
exits, so it is moved out of the cyclic garbage collector's sight before serving: otherwise every
full collection would walk each loaded object again, a pause that grows with the snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from kubemedic.model import objects
from kubemedic.output.files import write_atomically
from kubemedic.sim.apiserver.http.faults import Faults
from kubemedic.sim.apiserver.server import ApiServer, kubeconfig
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.snapshot import loading


@dataclass
class ServeOptions:
    port: int = 0
    kubeconfig_out: Path | None = None
    #: Replace a ``kubeconfig_out`` that is a link or special file (never a directory).
    force: bool = False
    load: Path | None = None
    event_ttl: timedelta = timedelta(hours=1)
    history: int = 100_000
    speed: float = 1.0
    #: Fault settings by name, typed (``parse_assignments`` reads ``--fault`` flags so).
    faults: dict[str, object] = field(default_factory=dict)
    #: ``snapshot`` (the newest time in the loaded objects, as ``scan`` sees it), ``now``, or an
    #: RFC 3339 time.
    clock_start: str = "snapshot"


def write_kubeconfig(
    path: Path, url: str, *, force: bool = False, flag: str = "--kubeconfig-out"
) -> None:
    """Write a kubeconfig for ``url`` atomically, never over a directory, link or special file
    unless ``force``."""
    text = yaml.safe_dump(kubeconfig(url), sort_keys=False)
    write_atomically(path, text.encode(), flag=flag, force=force)


def build(options: ServeOptions) -> ApiServer:
    """The server with its snapshot loaded (raises SnapshotError, FaultError or another
    ValueError on bad input)."""
    faults = Faults()
    faults.update(options.faults)
    snapshot = loading.load_snapshot(options.load) if options.load is not None else None
    origin = _clock_origin(options.clock_start, snapshot)
    server = ApiServer(
        clock=VirtualClock(origin, speed=options.speed),
        history=options.history,
        event_ttl=options.event_ttl,
        faults=faults,
    )
    if snapshot is not None:
        server.load(snapshot.bodies)
    return server


def _clock_origin(start: str, snapshot: loading.LoadedSnapshot | None) -> datetime | None:
    """Where virtual time starts: by default where the snapshot ends, so ages, heartbeats and
    event times read as they did when it was taken."""
    if start == "now":
        return None
    if start == "snapshot":
        if snapshot is None or not snapshot.bodies:
            return None
        newest = snapshot.view().now
        return newest if newest.year > 1970 else None
    moment = objects.parse_time(start)
    if moment is None:
        raise ValueError(f"--clock-start {start!r} is not 'snapshot', 'now' or an RFC 3339 time")
    return moment


async def serve(
    server: ApiServer, options: ServeOptions, *, ready: Callable[[ApiServer], None] | None = None
) -> None:
    """Serve until a stop signal; ``ready`` is called once the port answers."""
    gc.collect()
    gc.freeze()
    port = await server.start(port=options.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        if options.kubeconfig_out is not None:
            write_kubeconfig(
                options.kubeconfig_out, f"http://127.0.0.1:{port}", force=options.force
            )
        if ready is not None:
            ready(server)
        await stop.wait()
    finally:
        await server.stop()
