"""The agent's HTTP endpoints, served for real: /metrics in Prometheus' text format, /healthz
following the checks."""

from __future__ import annotations

from pathlib import Path

from aiohttp import ClientSession

from kubemedic.agent.daemon import Agent
from kubemedic.agent.serving import serve
from kubemedic.agent.settings import AgentConfig
from kubemedic.kube.api import Api
from tests.agent.fakes import FakeHost
from tests.repair.served import NODE, Served


def test_metrics_and_healthz(served: Served, tmp_path: Path) -> None:
    async def scenario(api: Api) -> None:
        config = AgentConfig(state_file=str(tmp_path / "state.json"))
        start = await api.server_time()
        assert start is not None
        clock = [start]
        agent = Agent(
            api=api,
            host=FakeHost(now=lambda: clock[0]),
            node=NODE,
            config=config,
            now=lambda: clock[0],
            version="test",
        )
        runner = await serve(agent, "127.0.0.1", 0)
        try:
            port = runner.addresses[0][1]
            async with ClientSession() as http:
                await agent.check("kubelet")
                async with http.get(f"http://127.0.0.1:{port}/metrics") as answer:
                    assert answer.status == 200
                    assert answer.headers["Content-Type"].startswith("text/plain")
                    text = await answer.text()
                assert 'kubemedic_agent_probes_total{daemon="kubelet",result="healthy"} 1.0' in (
                    text
                )
                assert "kubemedic_agent_daemon_unhealthy" in text
                async with http.get(f"http://127.0.0.1:{port}/healthz") as answer:
                    assert (answer.status, await answer.text()) == (200, "ok")
                async with http.get(f"http://127.0.0.1:{port}/readyz") as answer:
                    assert (answer.status, await answer.text()) == (200, "ok")
                clock[0] = clock[0] + config.kubelet.stable  # the checks stopped long ago
                async with http.get(f"http://127.0.0.1:{port}/healthz") as answer:
                    assert answer.status == 503
        finally:
            await runner.cleanup()

    served.run(scenario)
