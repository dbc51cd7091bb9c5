"""deploy/: the agent's manifests render, validate against Kubernetes 1.32's schemas, and grant
exactly the API calls the agent makes (recorded against the emulator), nothing more."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.agent.daemon import Agent
from kubemedic.agent.settings import AgentConfig, KubeletConfig, RuntimeConfig
from kubemedic.kube.api import Api, Kind
from kubemedic.sim.apiserver.http import RequestLog
from kubemedic.sim.apiserver.server import kubeconfig
from tests.agent.fakes import FakeHost
from tests.paths import ROOT
from tests.repair.served import NODE, Served

DEPLOY = ROOT / "deploy"
KUBECTL = shutil.which("kubectl")


def rendered() -> list[dict[str, Any]]:
    """The agent's objects of the rendered base (tests/deploy checks the others)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the base is rendered with `kubectl kustomize`")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(DEPLOY)], check=True, capture_output=True, text=True
    ).stdout
    return [
        d
        for d in yaml.safe_load_all(out)
        if d and d["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "kubemedic-agent"
    ]


def test_the_base_renders_and_every_object_is_valid() -> None:
    objects = rendered()
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("DaemonSet", "kubemedic-agent") in kinds
    for body in objects:
        if body["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # a custom resource: tests/deploy/test_render.py checks its structure
        kubernetes_validate.validate(body, "1.32.0", strict=True)


def test_the_agent_runs_with_least_privilege() -> None:
    daemonset = next(o for o in rendered() if o["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    container = pod["containers"][0]
    security = container["securityContext"]
    assert security["privileged"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod["hostNetwork"] is True  # the kubelet's /healthz is on 127.0.0.1:10248
    assert pod["serviceAccountName"] == "kubemedic-agent"
    paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert paths == {"/run/systemd", "/run/containerd", "/var/lib/kubemedic"}
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


# -- the permissions against the calls ----------------------------------------------------------


class RecordingApi(Api):
    """The agent's client, noting every call as (verb, resource, namespace)."""

    calls: set[tuple[str, str, str]]

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.calls.add(_rbac(method, path, kwargs.get("params") or {}))
        return await super().request(method, path, **kwargs)

    async def watch(self, kind: Kind, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls.add(("watch", kind.plural, kwargs.get("namespace") or ""))
        async for event in super().watch(kind, **kwargs):
            yield event


def _rbac(method: str, path: str, params: Mapping[str, Any]) -> tuple[str, str, str]:
    parts = path.strip("/").split("/")
    assert parts[:2] == ["api", "v1"], path
    rest = parts[2:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    verb = {
        "GET": "get" if named else ("watch" if params.get("watch") else "list"),
        "POST": "create",
        "PATCH": "patch",
        "PUT": "update",
        "DELETE": "delete",
    }[method]
    return verb, resource, namespace


def granted() -> set[tuple[str, str, str]]:
    rules: set[tuple[str, str, str]] = set()
    for body in rendered():
        if body["kind"] not in ("ClusterRole", "Role"):
            continue
        namespace = body["metadata"].get("namespace", "") if body["kind"] == "Role" else ""
        for rule in body["rules"]:
            assert rule["apiGroups"] == [""], rule
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule
            assert "secrets" not in rule["resources"]
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    rules.add((verb, resource, namespace))
    return rules


def test_the_rbac_grants_exactly_the_calls_the_agent_makes(served: Served, tmp_path: Path) -> None:
    fast = timedelta(milliseconds=100)
    config = AgentConfig(
        state_file=str(tmp_path / "state.json"),
        heartbeat=timedelta(seconds=1),
        kubelet=KubeletConfig(start_delay=timedelta(0), period=fast, cooldown=timedelta(0)),
        runtime=RuntimeConfig(start_delay=timedelta(0), period=fast),
    )
    calls: set[tuple[str, str, str]] = set()
    log = RequestLog()  # the same calls, as the API server's authorizer sees them
    served.emulator.server.request_log = log

    async def main() -> None:
        config_dict = kubeconfig(served.emulator.url)
        api = RecordingApi(AsyncClient(config=KubeConfig.from_dict(config_dict)))
        api.calls = calls
        other = Api(AsyncClient(config=KubeConfig.from_dict(config_dict)))
        host = FakeHost(now=lambda: datetime.now(UTC))
        host.kubelet.healthy = False  # a self-repair restart, its Event
        agent = Agent(api=api, host=host, node=NODE, config=config, version="test")
        task = asyncio.create_task(agent.run())
        try:
            for _ in range(200):
                await asyncio.sleep(0.05)
                if host.restarted and agent.node_body is not None:
                    break
            assert host.restarted == ["kubelet.service"]
            # a request from someone else (not through the agent's client): refused,
            # acknowledged, an Event
            await other.request(
                "PATCH",
                f"/api/v1/nodes/{NODE}",
                params={"fieldManager": "kubectl-annotate"},
                body={"metadata": {"annotations": {"kubemedic.io/agent-request": "{}"}}},
                content_type="application/merge-patch+json",
            )
            for _ in range(200):
                await asyncio.sleep(0.05)
                annotations = (agent.node_body or {}).get("metadata", {}).get("annotations", {})
                if "kubemedic.io/agent-ack" in annotations:
                    break
            assert "kubemedic.io/agent-ack" in annotations
            # the same Event again within the aggregation window: its count is bumped
            await agent.events.record(NODE, "KubemedicAgentRefused", "again", type_="Warning")
            await agent.events.record(NODE, "KubemedicAgentRefused", "again", type_="Warning")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await api.close()
            await other.close()

    asyncio.run(main())
    assert {(verb, resource, ns) for verb, _, resource, ns in log.rules()} == calls
    assert calls - granted() == set(), "calls the RBAC does not allow"
    assert granted() - calls == set(), "permissions the agent never uses"
