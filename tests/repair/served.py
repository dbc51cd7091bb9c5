"""An API emulator served over HTTP for the repair's hands, and the objects they work on.

``Served.run(scenario)`` runs ``scenario(api)`` with a real :class:`~kubemedic.kube.api.Api`
client (lightkube underneath) against the emulator; ``create`` writes an object as its usual
writer would (a Node as the kubelet, so ``managedFields`` are tracked), ``load`` stores objects
with their status as given (pods Running and Ready, which a create would reset).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.kube.api import Api
from kubemedic.kube.clock import CLOCK_PATH
from kubemedic.sim.apiserver.server import kubeconfig
from tests import factories as f
from tests.sim.conftest import Running, start_emulator

T = TypeVar("T")

NODE = "worker-1"


@dataclass
class Served:
    emulator: Running

    def run(self, scenario: Callable[[Api], Awaitable[T]]) -> T:
        async def main() -> T:
            api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(self.emulator.url))))
            try:
                return await scenario(api)
            finally:
                await api.close()

        return asyncio.run(main())

    def create(self, body: dict[str, Any], *, path: str, manager: str) -> dict[str, Any]:
        meta = {
            k: v
            for k, v in body["metadata"].items()
            if k not in ("uid", "resourceVersion", "creationTimestamp")
        }
        status, answer, _ = self.emulator.request(
            "POST", f"{path}?fieldManager={manager}", {**body, "metadata": meta}
        )
        assert status == 201, answer
        return dict(answer)

    def load(self, *objects: dict[str, Any]) -> None:
        self.emulator.load(*objects)

    def get(self, path: str) -> dict[str, Any]:
        status, answer, _ = self.emulator.request("GET", path)
        assert status == 200, answer
        return dict(answer)

    def node(self, name: str = NODE) -> dict[str, Any]:
        return self.get(f"/api/v1/nodes/{name}")

    def pods(self, node: str = NODE) -> dict[str, dict[str, Any]]:
        """The pods on ``node`` by ``namespace/name``."""
        items = self.get(f"/api/v1/pods?fieldSelector=spec.nodeName={node}")["items"]
        return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in items}

    def events(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/namespaces/default/events")["items"])

    def advance(self, seconds: float) -> None:
        """Move the emulator's clock on (graceful deletions end, budgets follow)."""
        status, answer, _ = self.emulator.request("PUT", CLOCK_PATH, {"advanceSeconds": seconds})
        assert status == 200, answer

    def until(self, what: str, predicate: Callable[[], bool], *, wall: float = 30.0) -> None:
        """Wait for the emulator's own loops (a guard against hanging, not a timing check)."""
        deadline = time.monotonic() + wall
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)


def serve(tmp_path: Path) -> Iterator[Served]:
    for running in start_emulator(tmp_path):
        served = Served(running)
        served.create(
            f.node(
                NODE,
                labels={"pool": "workers"},
                taints=[{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
            ),
            path="/api/v1/nodes",
            manager="kubelet",
        )
        yield served
