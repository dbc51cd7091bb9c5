"""API discovery against the emulator: the served kinds, preferred versions, and a group version
that cannot be listed skipped with its reason."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.kube.api import Api
from kubemedic.kube.discovery import Discovery, discover
from kubemedic.sim.apiserver.server import kubeconfig
from tests.sim.conftest import Running, start_emulator


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def run(emulator: Running) -> Discovery:
    async def main() -> Discovery:
        api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(emulator.url))))
        try:
            return await discover(api)
        finally:
            await api.close()

    return asyncio.run(main())


def test_the_served_kinds_and_their_resources(emulator: Running) -> None:
    found = run(emulator)
    deployments = found.kind("apps/v1", "Deployment")
    assert deployments is not None
    assert (deployments.plural, deployments.namespaced) == ("deployments", True)
    nodes = found.kind("v1", "Node")
    assert nodes is not None and nodes.plural == "nodes" and not nodes.namespaced
    assert found.kind("v1", "PodStatus") is None
    assert all("/" not in k.plural for k in found.kinds.values())  # no subresources
    assert found.preferred["apps"] == "v1"


def test_an_unserved_version_falls_back_to_the_preferred_one(emulator: Running) -> None:
    found = run(emulator)
    old = found.kind("apps/v1beta2", "Deployment")
    assert old is not None and old.version == "v1"
    assert found.kind("example.com/v1", "Widget") is None
