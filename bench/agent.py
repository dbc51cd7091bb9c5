"""The node agent at scale: how fast a request is carried out, and what it costs the API server.

    python bench/agent.py                      # 200 agents, 60 s steady state, 200 requests
    python bench/agent.py --agents 500 --steady 120

``kubemedic sim serve`` runs in its own process; this process runs ``--agents`` real
:class:`kubemedic.agent.daemon.Agent` loops (``run()``, as on a node: conditions every 30 s,
the Node followed by a watch on ``metadata.name``) on hosts that only record what they are asked
to do. The agents' clients count their API calls. Measured:

- **steady state**: API calls per agent per minute over ``--steady`` seconds with nothing
  happening (the heartbeat's status patches, watch reconnects);
- **request latency**: the controller (this process, its own client) writes a
  ``restart-kubelet`` request on every node, spread over ``--spread`` seconds; the latency of
  one is from the write's answer to the host's restart call. Median, 95th percentile, maximum.

Baseline, in the same run: the same agents following their Node by a GET every 10 s instead of
the watch (what a simple agent polling its Node would do). Printed: both designs' figures and
the ratios. Timing is never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import yaml
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.agent.daemon import Agent
from kubemedic.agent.host import Probe, UnitStatus
from kubemedic.agent.settings import AgentConfig, KubeletConfig, RuntimeConfig
from kubemedic.kube.api import Api, ApiError, ConnectionLost, Kind
from kubemedic.model import agentcontract as contract

POLL = 10.0


class CountingApi(Api):
    calls = 0

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        CountingApi.calls += 1
        return await super().request(method, path, **kwargs)

    async def watch(self, kind: Kind, **kwargs: Any) -> Any:
        CountingApi.calls += 1
        async for event in super().watch(kind, **kwargs):
            yield event


class RecordingHost:
    """A healthy host that notes when it is asked to restart (the request's latency)."""

    def __init__(self, node: str, restarted: dict[str, float]) -> None:
        self.node = node
        self.restarted = restarted

    def unit_status(self, unit: str) -> UnitStatus:
        return UnitStatus(unit, "active")

    def restart_unit(self, unit: str) -> None:
        del unit
        self.restarted[self.node] = time.monotonic()

    def probe_runtime(self, timeout: float) -> Probe:
        del timeout
        return Probe(True, "ok")

    def probe_kubelet(self, timeout: float) -> Probe:
        del timeout
        return Probe(True, "ok")

    def boot_id(self) -> str:
        return "00000000-0000-4000-8000-000000000000"

    def reboot(self) -> None:
        pass


class PollingAgent(Agent):
    """The baseline: the Node read every 10 s instead of followed by a watch."""

    async def _node_loop(self) -> None:
        while True:
            try:
                node = await self.api.request("GET", f"/api/v1/nodes/{self.node}")
                if isinstance(node, dict):
                    await self._handle_safely(node)
            except (ApiError, ConnectionLost):
                pass
            await asyncio.sleep(POLL)


def client(kubeconfig: dict[str, Any], cls: type[Api] = Api) -> Api:
    return cls(AsyncClient(config=KubeConfig.from_dict(kubeconfig), timeout=60))


async def design(
    name: str,
    *,
    make: Callable[..., Agent],
    kubeconfig: dict[str, Any],
    nodes: list[str],
    args: argparse.Namespace,
    tmp: Path,
) -> dict[str, float]:
    restarted: dict[str, float] = {}
    quiet = timedelta(hours=1)  # no health checks during the run: only reports and requests
    config = AgentConfig(
        self_repair=False,
        kubelet=KubeletConfig(start_delay=quiet),
        runtime=RuntimeConfig(start_delay=quiet),
    )
    apis = [client(kubeconfig, CountingApi) for _ in nodes]
    agents = [
        make(
            api=api,
            host=RecordingHost(node, restarted),
            node=node,
            config=_with_state(config, tmp / f"{name}-{node}.json"),
            version="bench",
        )
        for api, node in zip(apis, nodes, strict=True)
    ]
    tasks = [asyncio.create_task(a.run()) for a in agents]
    await asyncio.sleep(5)  # started: first reports and watches
    CountingApi.calls = 0
    await asyncio.sleep(args.steady)
    per_minute = CountingApi.calls / len(nodes) / (args.steady / 60)
    controller = client(kubeconfig)
    written: dict[str, float] = {}
    gap = args.spread / max(len(nodes), 1)
    for n, node in enumerate(nodes):
        request = {
            "id": f"{name}-{n}",
            "action": "restart-kubelet",
            "requestedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "requester": "bench",
        }
        await controller.request(
            "PATCH",
            f"/api/v1/nodes/{node}",
            params={"fieldManager": contract.CONTROLLER_MANAGER},
            body={"metadata": {"annotations": {contract.REQUEST_ANNOTATION: json.dumps(request)}}},
            content_type="application/merge-patch+json",
        )
        written[node] = time.monotonic()
        await asyncio.sleep(gap)
    deadline = time.monotonic() + POLL + 60
    while len(restarted) < len(nodes) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for api in [*apis, controller]:
        await api.close()
    latencies = sorted(restarted[n] - written[n] for n in nodes if n in restarted)
    return {
        "per_minute": per_minute,
        "done": len(latencies),
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p95": latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan"),
        "max": latencies[-1] if latencies else float("nan"),
    }


def _with_state(config: AgentConfig, path: Path) -> AgentConfig:
    return replace(config, state_file=str(path))


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        kc_path = tmp / "kubeconfig"
        server = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from kubemedic.cli import main; main()",
                "sim",
                "serve",
                "--kubeconfig-out",
                str(kc_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                if kc_path.exists() and kc_path.stat().st_size:
                    break
                await asyncio.sleep(0.1)
            kubeconfig = yaml.safe_load(kc_path.read_text())
            setup = client(kubeconfig)
            nodes = [f"node-{n:04d}" for n in range(args.agents)]
            for node in nodes:
                await setup.request(
                    "POST",
                    "/api/v1/nodes",
                    params={"fieldManager": "kubelet"},
                    body={
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}},
                    },
                )
            await setup.close()
            print(
                f"{args.agents} agents, {args.steady:g} s steady state, "
                f"{args.agents} requests over {args.spread:g} s"
            )
            results = {}
            for label, make in (("watch", Agent), ("poll 10s (baseline)", PollingAgent)):
                results[label] = await design(
                    label.split()[0],
                    make=make,
                    kubeconfig=kubeconfig,
                    nodes=nodes,
                    args=args,
                    tmp=tmp,
                )
                r = results[label]
                print(
                    f"{label:22} API calls/agent/min {r['per_minute']:6.2f}   "
                    f"requests done {int(r['done'])}/{args.agents}   latency p50 "
                    f"{r['p50']:.3f} s  p95 {r['p95']:.3f} s  max {r['max']:.3f} s"
                )
            w, b = results["watch"], results["poll 10s (baseline)"]
            if not (w["per_minute"] and b["per_minute"] and w["done"] and b["done"]):
                return
            print(
                f"ratio watch/baseline: API calls {w['per_minute'] / b['per_minute']:.2f}x; "
                f"latency p50 {w['p50'] / b['p50']:.5f}x ({b['p50'] / w['p50']:,.0f} times "
                f"shorter), p95 {w['p95'] / b['p95']:.5f}x"
            )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--steady", type=float, default=60.0)
    parser.add_argument("--spread", type=float, default=20.0)
    asyncio.run(main(parser.parse_args()))
