"""A small Cluster API cluster served over HTTP with its simulated OpenStack cloud, for tests
that drive the cloud with the real openstacksdk.

:func:`serve_cloud` plays the scenario's setup (two machines boot and their Nodes turn Ready),
serves the API and the cloud on a free port from an event loop in a thread, and writes both
``clouds.yaml`` flavours the way ``sim run --serve --clouds-out`` does. The cluster's clock stays
paused while the test talks to the cloud: :meth:`ServedCloud.advance` moves it (the components
run), so what a test sees never depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from kubemedic.sim import scenarios
from kubemedic.sim.cluster import CLOUD_NAME, Cloud
from kubemedic.sim.scenarios.timeline import ScenarioRun
from tests.sim.conftest import call_on

T = TypeVar("T")

SCENARIO = """\
name: openstack-cloud
description: Two Cluster API machines on the simulated OpenStack cloud.
duration: 2h
pools:
  - name: workers
    count: 2
    provider: clusterapi
    zones: [zone-a]
    bootTime: 30s
    capacity: {cpu: "4", memory: 16Gi, pods: 110}
"""

#: Longer than a machine's boot and the kubelet's next status post.
BOOTED = timedelta(seconds=90)


@dataclass
class ServedCloud:
    run: ScenarioRun
    cloud: Cloud
    loop: asyncio.AbstractEventLoop
    url: str
    #: ``clouds.yaml`` files by auth method: ``application_credential`` (what ``--clouds-out``
    #: writes) and ``password``.
    clouds_yaml: dict[str, Path]
    name: str = CLOUD_NAME

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the server's loop (the simulation is not thread-safe)."""
        return call_on(self.loop, fn, timeout=60)

    def advance(self, span: timedelta) -> None:
        """Run the cluster for ``span`` of cluster time (as fast as it goes)."""
        self.call(lambda: self.run.sim.run_until(self.run.sim.now() + span))

    def nodes(self) -> dict[str, dict[str, Any]]:
        return self.call(lambda: {n["metadata"]["name"]: n for n in self.run.sim.objects("nodes")})

    def node(self, name: str) -> dict[str, Any]:
        return self.nodes()[name]


@contextmanager
def serve_cloud(tmp_path: Path) -> Iterator[ServedCloud]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "openstack-cloud.yaml"
    source.write_text(SCENARIO)
    run = ScenarioRun(scenarios.load(str(source)))
    cloud = Cloud(run.sim, run.cluster.hosts).serve_on(run.sim.server)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = run.sim.server
    port = asyncio.run_coroutine_threadsafe(server.start(port=0, tick=False), loop).result(30)
    url = f"http://127.0.0.1:{port}"
    files = {}
    for auth in ("application_credential", "password"):
        files[auth] = tmp_path / f"clouds-{auth}.yaml"
        cloud.write_clouds_yaml(files[auth], url, auth=auth)  # type: ignore[arg-type]
    try:
        yield ServedCloud(run, cloud, loop, url, files)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
