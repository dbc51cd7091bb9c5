"""The RBAC of `kubemedic run` and of the guard grants exactly the API calls they make.

The calls are recorded by the API emulator (``ApiServer.request_log``: each request's verb,
group, resource, subresource and namespace as kube-apiserver's authorizer sees them) while each
component does its work over HTTP:

- `kubemedic run` (its own process, following the server's clock), with node repair and the
  storm breaker acting (not in dry run), on the node-repair scenario (restarts through the
  agent, drains, reboots and Machine replacement through the simulated Nova and Cluster API,
  fencing, holds) and on gitops-nodename-storm (every breaker action: alert, revert, scale,
  prune), with the lease flags of the rendered Deployment;
- the guard (`kubemedic guard serve`'s server) answering kubectl's edits through the
  emulator's webhook call.

Each rendered permission of the component's ServiceAccount must be used by a recorded call, or
be listed in :data:`UNEXERCISED` with the reason no test run makes it (a run may still happen
to); each recorded call must be allowed. A cluster-wide permission used only in kubemedic's
own namespace would be a Role there. The node agent's permissions are checked the same way in
tests/agent/test_deploy.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic.guard.policy import Policy
from kubemedic.sim import cluster
from kubemedic.sim.apiserver.http import RequestLog
from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import GitTarget
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun
from tests.factories import node
from tests.guard.test_kubectl_guard import EDIT_REPLICAS, _apply, _argo_deployment, start_guard
from tests.sim.conftest import needs_kubectl, start_emulator

from ..run.harness import RecorderProcess, play_recorded
from .manifests import NAMESPACE, Grant, allowed, find, grants, render, used

#: Two scenarios played over HTTP: minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.timeout(1200), needs_kubectl]

_OWNER = "the storm scenario's owner is a Deployment"
_SCALE = "scale-to-fit acts only in a round that decided no revert; the storm's revert is decided"
UNEXERCISED: dict[str, dict[Grant, str]] = {
    "kubemedic": {
        **{
            ("get", group, resource, ""): f"the breaker's drift reads a storm's owner; {_OWNER}"
            for group, resource in (
                ("apps", "replicasets"),
                ("apps", "statefulsets"),
                ("apps", "daemonsets"),
                ("batch", "jobs"),
            )
        },
        **{
            ("patch", group, resource, ""): f"revert-out-of-band patches a storm's owner; {_OWNER}"
            for group, resource in (
                ("apps", "replicasets"),
                ("apps", "statefulsets"),
                ("apps", "daemonsets"),
                ("batch", "jobs"),
            )
        },
        **{
            ("update", "apps", f"{resource}/scale", ""): _SCALE
            for resource in ("deployments", "replicasets", "statefulsets")
        },
        ("patch", "", "events", ""): (
            "the same Event again within the aggregation window bumps its count (kube/events.py, "
            "as the agent's test shows); neither scenario repeats one within it"
        ),
    },
    "kubemedic-guard": {},
}
"""Permissions no recorded run uses, each with why it is granted anyway."""

BREAKER = (
    "breaker:\n"
    "  actions: [alert, revert-out-of-band, scale-to-fit, prune-failed]\n"
    "  dryRun: false\n"
)


def _lease_flags() -> list[str]:
    args = find(render(), "Deployment", "kubemedic")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    flags = [a for a in args if a.startswith(("--lease-namespace=", "--lease-name="))]
    assert len(flags) == 2, args
    return flags


async def _play(run: ScenarioRun, tmp: Path, config: str, speed: float, log: RequestLog) -> None:
    server = run.sim.server
    server.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    server.request_log = log
    cloud = cluster.Cloud(run.sim, run.cluster.hosts).serve_on(server)
    port = await server.start(port=0, tick=False)
    kubeconfig, clouds = tmp / "kubeconfig", tmp / "clouds.yaml"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    cloud.write_clouds_yaml(clouds, f"http://127.0.0.1:{port}")
    path = tmp / "kubemedic.yaml"
    path.write_text(config.format(clouds=clouds))
    text = tmp / "run.log"
    recorder = RecorderProcess(
        f"sqlite:///{tmp}/archive.db",
        kubeconfig,
        text,
        "--config",
        str(path),
        "--scan-interval",
        "1m",
        "--metrics-interval",
        "1m",
        *_lease_flags(),
    )
    await play_recorded(run, recorder, ready="storm breaker on", speed=speed)


@pytest.fixture(scope="module")
def run_calls(tmp_path_factory: pytest.TempPathFactory) -> RequestLog:
    log = RequestLog()
    tmp = tmp_path_factory.mktemp("node-repair")
    repairing = ScenarioRun(scenarios.load("node-repair"))
    config = (
        "repair:\n  dryRun: false\n  provider: openstack\n"
        "  openstack: {{cloud: kubemedic-sim, cloudsFile: {clouds}}}\n" + BREAKER
    )
    asyncio.run(_play(repairing, tmp, config, 300.0, log))
    tmp = tmp_path_factory.mktemp("storm")
    storming = ScenarioRun(
        scenarios.load("gitops-nodename-storm"),
        git=GitTarget(tmp / "gateway-ops"),
        until=timedelta(minutes=12),
    )
    try:
        config = "repair:\n  dryRun: false\n  provider: agent\n" + BREAKER
        asyncio.run(_play(storming, tmp, config, 30.0, log))
    finally:
        storming.close()
    return log


@pytest.fixture(scope="module")
def guard_calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RequestLog]:
    tmp = tmp_path_factory.mktemp("guard")
    log = RequestLog()
    for emulator in start_emulator(tmp):
        emulator.load(node("small-node", cpu="2", memory="2Gi"))
        emulator.kubectl("create", "namespace", "shop")
        _apply(emulator, _argo_deployment("web"), manager="argocd-controller")
        emulator.server.request_log = log
        guard = start_guard(emulator, tmp / "certs", Policy.WARN)
        try:
            rendered = find(render(), "ValidatingWebhookConfiguration", "kubemedic-guard")
            hook = rendered["webhooks"][0]
            hook["clientConfig"] = {
                "url": guard.url,
                "caBundle": _b64((tmp / "certs" / "ca.crt").read_bytes()),
            }
            emulator.kubectl("apply", "-f", "-", input=json.dumps(rendered))
            edited = emulator.kubectl("edit", "deployment", "web", "-n", "shop", env=EDIT_REPLICAS)
            assert "Warning: Deployment shop/web is managed by Argo CD" in edited.stderr
        finally:
            guard.stop()
    yield log


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _theirs(log: RequestLog) -> set[Grant]:
    """The calls of kubemedic, not of the kubectl the test or the scenario ran."""
    return {c.rule for c in log.calls if not c.user_agent.startswith("kubectl")}


def _compare(account: str, calls: set[Grant]) -> None:
    granted = grants(render(), account)
    for group, resource in {(g, r) for _, g, r, _ in granted}:
        assert resource.split("/")[0] != "secrets", "no component reads Secrets"
        assert "*" not in (group, resource)
    assert not {g for g in granted if g[0] == "*"}
    refused = sorted(c for c in calls if not allowed(c, granted))
    assert not refused, (
        f"calls the RBAC of {account} does not allow: {refused}; all: {sorted(calls)}"
    )
    explained = UNEXERCISED[account]
    unused = sorted(g for g in granted if not used(g, calls) and g not in explained)
    assert not unused, f"permissions of {account} no call uses: {unused}; calls: {sorted(calls)}"
    # An explained grant a run happens to use (an Event bumped within its window on a slow
    # machine) is fine; one that is not granted at all is a stale entry.
    stale = sorted(g for g in explained if g not in granted)
    assert not stale, f"UNEXERCISED entries of {account} that are not granted: {stale}"
    for grant in granted:
        namespaces = {c[3] for c in used(grant, calls)}
        if not grant[3] and namespaces == {NAMESPACE}:
            raise AssertionError(f"{grant} is only used in {NAMESPACE}: a Role there would do")


def test_kubemedic_run_is_granted_exactly_the_calls_it_makes(run_calls: RequestLog) -> None:
    agents = {c.user_agent for c in run_calls.calls}
    calls = _theirs(run_calls)
    assert calls, f"no call recorded (user agents: {agents})"
    _compare("kubemedic", calls)


def test_the_guard_is_granted_exactly_the_calls_it_makes(guard_calls: RequestLog) -> None:
    calls = _theirs(guard_calls)
    assert {("list", "", "nodes", ""), ("watch", "", "pods", "")} <= calls
    _compare("kubemedic-guard", calls)


def test_the_request_log_names_calls_as_the_authorizer_does(tmp_path: Path) -> None:
    """Verbs by method and path, subresources, namespaces, watches (kube-apiserver's
    RequestInfoFactory)."""
    log = RequestLog()
    for emulator in start_emulator(tmp_path):
        emulator.load(node("n1", cpu="2", memory="2Gi"))
        emulator.server.request_log = log
        emulator.request("GET", "/api/v1/nodes")
        emulator.request("GET", "/api/v1/nodes?watch=true&timeoutSeconds=1")
        emulator.request("GET", "/api/v1/nodes/n1")
        emulator.request(
            "PATCH",
            "/api/v1/nodes/n1/status",
            {"status": {}},
            content_type="application/merge-patch+json",
        )
        emulator.request(
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            {"metadata": {"name": "l"}, "spec": {}},
        )
        emulator.request("DELETE", "/api/v1/namespaces/default/pods")
        emulator.request("GET", "/version")
        emulator.request("GET", "/apis/apps/v1")
    assert [c.rule for c in log.calls] == [
        ("list", "", "nodes", ""),
        ("watch", "", "nodes", ""),
        ("get", "", "nodes", ""),
        ("patch", "", "nodes/status", ""),
        ("create", "coordination.k8s.io", "leases", "default"),
        ("deletecollection", "", "pods", "default"),
    ]
