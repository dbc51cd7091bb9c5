"""``kubemedic scan`` of a live cluster, and the one-shot fetch under it, against the emulator
over HTTP: the same findings as a snapshot of the same objects, pagination, 410 on an expired
continue token, throttling and failing servers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightkube
import pytest
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.kube import config, kinds, livescan
from kubemedic.kube.api import Api, Kind
from kubemedic.kube.config import KubeAccessError
from kubemedic.model.objects import parse_time
from kubemedic.sim.apiserver.snapshotting import write_snapshot
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.snapshot import loading
from tests import paths
from tests.sim.conftest import Running, start_emulator

SNAPSHOTS = paths.SNAPSHOTS
runner = CliRunner()


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


@contextlib.contextmanager
def serve_snapshot(tmp_path: Path, name: str) -> Iterator[Running]:
    """The emulator holding a bundled snapshot, its clock paused where the snapshot ends."""
    loaded = loading.load_snapshot(SNAPSHOTS / name)
    clock = VirtualClock(loaded.view().now, paused=True)
    emulators = start_emulator(tmp_path, clock=clock)
    running = next(emulators)
    try:
        running.call(functools.partial(running.server.load, loaded.bodies))
        yield running
    finally:
        emulators.close()


def scan(*args: str) -> Any:
    return runner.invoke(app, ["scan", *args], terminal_width=200)


def findings_of(result: Any) -> list[dict[str, Any]]:
    assert result.exit_code in (0, 1), result.stderr
    findings: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    return findings


def api_for(running: Running, cls: type[Api] = Api) -> Api:
    resolved = config.resolve(running.kubeconfig)
    return cls(lightkube.AsyncClient(resolved.config), cluster=resolved.cluster)


def fetch(api: Api, **kwargs: Any) -> livescan.LiveSnapshot:
    async def main() -> livescan.LiveSnapshot:
        try:
            return await livescan.fetch(api, **kwargs)
        finally:
            await api.close()

    return asyncio.run(main())


# -- scan ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["2-node-repair", "3-hub-eviction"])
def test_a_live_scan_finds_what_a_snapshot_scan_of_the_same_objects_finds(
    tmp_path: Path, name: str
) -> None:
    dump = tmp_path / "dump.json"
    with serve_snapshot(tmp_path, name) as running:
        live = findings_of(scan("--kubeconfig", str(running.kubeconfig), "-o", "json"))
        running.call(functools.partial(write_snapshot, dump, running.server))
        clock = running.request("GET", "/kubemedic.io/v1/clock")[1]["now"]
        offline = findings_of(scan("--snapshot", str(dump), "--at", clock, "-o", "json"))
        assert live, "the incident leaves findings"
        assert live == offline


def test_the_live_table_names_the_context_and_server_and_at_and_check_still_work(
    tmp_path: Path,
) -> None:
    with serve_snapshot(tmp_path, "2-node-repair") as running:
        kubeconfig = str(running.kubeconfig)
        result = scan("--kubeconfig", kubeconfig)
        assert result.exit_code == 1
        assert "context kubemedic-sim" in result.stdout
        assert running.url in result.stdout
        assert "node-not-ready" in result.stdout
        # Judged an hour earlier, before the node stopped reporting: no node-not-ready.
        earlier = scan("--kubeconfig", kubeconfig, "-o", "json", "--at", "2021-11-04T05:41:17Z")
        assert "node-not-ready" not in {f["check"] for f in findings_of(earlier)}
        only = scan("--kubeconfig", kubeconfig, "-o", "json", "--check", "node-not-ready")
        assert {f["check"] for f in findings_of(only)} == {"node-not-ready"}


def test_scan_reads_KUBECONFIG_and_context_when_no_snapshot_is_given(
    emulator: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(emulator.kubeconfig))
    monkeypatch.setenv("HOME", str(tmp_path))
    result = scan("-o", "json", "--context", "kubemedic-sim")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["findings"] == []
    unknown = scan("--context", "prod")
    assert unknown.exit_code == 2
    assert "--context prod" in unknown.stderr
    assert "kubemedic-sim" in unknown.stderr


def test_snapshot_and_kubeconfig_together_are_a_usage_error(
    emulator: Running, tmp_path: Path
) -> None:
    result = scan("--snapshot", str(tmp_path), "--kubeconfig", str(emulator.kubeconfig))
    assert result.exit_code == 2
    assert "--snapshot" in result.stderr and "--kubeconfig" in result.stderr


def test_an_unreachable_server_exits_2_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    path = tmp_path / "config"
    path.write_text(
        json.dumps(
            {
                "clusters": [{"name": "gone", "cluster": {"server": url}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone"}}],
                "current-context": "gone",
            }
        )
    )
    result = scan("--kubeconfig", str(path), "-o", "json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "cannot reach the API server" in result.stderr
    assert url in result.stderr


def test_a_server_answering_500_exits_2_naming_the_server_and_path(emulator: Running) -> None:
    emulator.call(lambda: emulator.server.faults.update({"error_rate": 1.0}))
    result = scan("--kubeconfig", str(emulator.kubeconfig), "-o", "json")
    assert result.exit_code == 2
    assert result.stdout == ""
    message = " ".join(result.stderr.split())
    assert emulator.url in message
    assert "HTTP 500" in message
    assert "gave up after 5 attempts" in message
    assert any(kind.path() in message for kind in livescan.DEFAULT_KINDS)


# -- fetch -----------------------------------------------------------------------------------


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
    }


def test_fetch_pages_through_every_kind_and_stamps_kind_and_api_version(
    emulator: Running,
) -> None:
    emulator.load(*[node(f"n{i:02d}") for i in range(12)], *[pod(f"p{i:02d}") for i in range(7)])
    before = emulator.request("GET", "/kubemedic.io/v1/clock")[1]["now"]
    fetched = fetch(api_for(emulator), page_size=5)
    after = emulator.request("GET", "/kubemedic.io/v1/clock")[1]["now"]
    assert fetched.counts["v1/nodes"] == 12
    assert fetched.counts["v1/pods"] == 7
    names = sorted(b["metadata"]["name"] for b in fetched.bodies if b["kind"] == "Node")
    assert names == [f"n{i:02d}" for i in range(12)]
    assert all(b["apiVersion"] == "v1" for b in fetched.bodies if b["kind"] in ("Node", "Pod"))
    # The server's (virtual) time, read after the lists.
    assert fetched.at is not None
    assert parse_time(before) <= fetched.at <= parse_time(after)
    # The emulator serves every kind a live scan reads, the system PriorityClasses included.
    assert not any("Not served" in note for note in fetched.notes), fetched.notes
    assert fetched.counts["batch/v1/jobs"] == 0
    assert fetched.counts["scheduling.k8s.io/v1/priorityclasses"] == 2


def test_throttling_is_retried_after_at_least_retry_after(emulator: Running) -> None:
    emulator.load(*[node(f"n{i:02d}") for i in range(30)], *[pod(f"p{i:02d}") for i in range(30)])
    emulator.call(
        lambda: emulator.server.faults.update({"throttle_rate": 0.3, "retry_after": 2, "seed": 7})
    )
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    fetched = fetch(api_for(emulator), page_size=5, attempts=10, sleep=no_sleep)
    assert fetched.counts["v1/nodes"] == 30 and fetched.counts["v1/pods"] == 30
    assert waits, "some requests were throttled"
    assert all(wait >= 2 for wait in waits)


class WritesBetweenPages(Api):
    """Writes enough after a first page of pods that the server compacts past the list's
    resourceVersion, so its continue token expires (410) — once, or on every list."""

    every_time = False
    lists = 0

    async def list_page(self, kind: Kind, **kwargs: Any) -> dict[str, Any]:
        page = await super().list_page(kind, **kwargs)
        first = kwargs.get("continue_token") is None
        if kind == kinds.PODS and first and (self.every_time or self.lists == 0):
            self.lists += 1
            for _ in range(20):
                await self.request(
                    "POST",
                    "/api/v1/namespaces/default/configmaps",
                    body={
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"generateName": "c-"},
                    },
                )
        return page


@pytest.fixture
def short_history(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path, history=10)


def test_an_expired_continue_token_restarts_the_list_once(short_history: Running) -> None:
    short_history.load(*[pod(f"p{i:02d}") for i in range(30)])
    fetched = fetch(api_for(short_history, WritesBetweenPages), kinds=(kinds.PODS,), page_size=10)
    assert fetched.counts["v1/pods"] == 30
    assert any("restarted" in note and "410" in note for note in fetched.notes)


def test_a_continue_token_expiring_twice_is_an_error(short_history: Running) -> None:
    short_history.load(*[pod(f"p{i:02d}") for i in range(30)])

    class Always(WritesBetweenPages):
        every_time = True

    with pytest.raises(KubeAccessError) as error:
        fetch(api_for(short_history, Always), kinds=(kinds.PODS,), page_size=10)
    assert "/api/v1/pods" in str(error.value)
    assert "410" in str(error.value) and "expired twice" in str(error.value)


def test_metrics_not_served_is_a_note_not_an_error(emulator: Running) -> None:
    emulator.load(node("n1"))
    missing = Kind("metrics.k8s.io", "v1beta2", "nodes", "NodeMetrics", namespaced=False)
    fetched = fetch(api_for(emulator), kinds=(kinds.NODES, missing))
    assert fetched.counts == {"v1/nodes": 1}
    assert any("metrics.k8s.io is not served" in note for note in fetched.notes)


def test_nodes_not_served_is_an_error(emulator: Running) -> None:
    wrong = Kind("", "v2", "nodes", "Node", namespaced=False)
    with pytest.raises(KubeAccessError, match=r"/api/v2/nodes: HTTP 404"):
        fetch(api_for(emulator), kinds=(wrong,))


def test_secrets_are_never_listed(emulator: Running) -> None:
    secrets = Kind("", "v1", "secrets", "Secret", namespaced=True)
    with pytest.raises(ValueError, match="Secrets"):
        fetch(api_for(emulator), kinds=(secrets,))
    assert secrets not in livescan.DEFAULT_KINDS
