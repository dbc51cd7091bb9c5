"""Act 1: the kubectl edit GitOps never saw, the Failed-pod storm it set off, the breaker that
stops it and the guard that refuses it the next time (incident 1).

The gitops-nodename-storm scenario is served over HTTP, its Argo CD syncing from a real Git
repository written into the scratch directory. ``kubemedic run`` records it with the storm
breaker acting (``alert``, ``revert-out-of-band``), and ``kubemedic guard serve`` watches it.
The play stops at 4m30s, after the edit and before the push that turns it into a storm, for
``kubemedic drift`` to show the edit against Git with who made it and when (managedFields); it
then goes on to 12 minutes. At the end the guard's ValidatingWebhookConfiguration (``kubemedic
guard render``) is registered in the API server, and the same edit is made again, with the real
kubectl when there is one: the API server asks the guard, which refuses it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import sys
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kubemedic.demo.children import Child, DemoError, command, until
from kubemedic.demo.staging import Stage, stopped
from kubemedic.demo.telling import WIDTH, Row, clock, moment
from kubemedic.sim import apiserver, scenarios
from kubemedic.store.db import Archive

__all__ = ["CLUSTER", "play"]

CLUSTER = "gitops-storm"
SCENARIO = "gitops-nodename-storm"
#: Cluster seconds per wall second, and how long the play goes (the storm starts at 5m).
SPEED = 40.0
UNTIL = timedelta(minutes=12)
#: Where the play stops for ``kubemedic drift``: after the edit (4m), before the push (5m).
PAUSE = timedelta(minutes=4, seconds=30)
NAMESPACE, NAME = "gateway", "api-gateway"
NODE_NAME = "/spec/template/spec/nodeName"

CONFIG = "breaker:\n  actions: [alert, revert-out-of-band]\n  dryRun: false\n"
GUARD_CONFIG = "guard:\n  policy: deny\n"

EDITOR = """#!{python}
# kubectl edit's editor for the demo: the same change the engineer made by hand.
import sys
import yaml
with open(sys.argv[1], encoding="utf-8") as text:
    body = yaml.safe_load(text)
body["spec"]["template"]["spec"]["nodeName"] = {node!r}
with open(sys.argv[1], "w", encoding="utf-8") as text:
    yaml.safe_dump(body, text)
"""


async def play(stage: Stage) -> list[Row]:
    teller = stage.teller
    teller.act(1, "a kubectl edit GitOps never saw, and the Failed-pod storm it set off")
    scratch = stage.scratch / "act1"
    scratch.mkdir()
    repository = scratch / "gateway-ops"
    run = scenarios.ScenarioRun(
        scenarios.load(SCENARIO), git=scenarios.GitTarget(repository), until=UNTIL
    )
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    api = f"http://127.0.0.1:{port}"
    kubeconfig = scratch / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig, api)
    try:
        guard, guard_port = _start_guard(stage, scratch, kubeconfig)
        recorder = await stage.recorder(
            act=1,
            cluster=CLUSTER,
            kubeconfig=kubeconfig,
            config=CONFIG,
            marker="storm breaker on",
            extra=["--scan-interval", "1m", "--metrics-interval", "5m"],
        )
        teller.said(
            f"Cluster {CLUSTER}: 3 nodes of ~8 GiB; Argo CD syncs the Deployment "
            f"{NAMESPACE}/{NAME} (12 replicas of 800Mi) from the Git repository {repository}. "
            "kubemedic run records it with the storm breaker acting (alert, "
            "revert-out-of-band, not a dry run); kubemedic guard serve watches it. Cluster "
            f"time runs {SPEED:g}x real time.",
            style="dim",
        )
        await stage.play(run, speed=SPEED, label="act 1", to=run.origin + PAUSE)
        node = await _drift(stage, run, kubeconfig)
        await stage.play(run, speed=SPEED, label="act 1")
        storm = _storm(stage, run)
        refused = await _guarded(
            stage,
            scratch=scratch,
            kubeconfig=kubeconfig,
            api=api,
            guard=guard,
            port=guard_port,
            node=node,
        )
        await stopped(stage, recorder)
        await stage.children.stop(guard)
    finally:
        await server.stop()
        run.close()
    incident = await _incident(stage)
    links = [("the breaker's decisions and its revert patch", teller.url("/storms", CLUSTER))]
    if incident:
        where = teller.url(f"/incidents/{incident}", CLUSTER)
        links.append(("the storm's incident: timeline, cause, evidence", where))
    links.append(
        (
            "the breaker's Events",
            teller.url("/events", CLUSTER, reason="KubemedicBreakerRevertOutOfBand"),
        )
    )
    teller.look(links)
    return [
        Row(
            f"1. kubectl edit pins {NAMESPACE}/{NAME} to {node}; Argo CD stays Synced",
            storm[0],
            f"{storm[1]}; {refused}",
        )
    ]


def _start_guard(stage: Stage, scratch: Path, kubeconfig: Path) -> tuple[Child, int]:
    from kubemedic.demo.dashboard import choose_port  # noqa: PLC0415 - a free port

    port = choose_port(0)
    config = scratch / "guard.yaml"
    config.write_text(GUARD_CONFIG, encoding="utf-8")
    child = stage.children.start(
        "kubemedic guard serve (act 1)",
        ["guard", "serve", "--kubeconfig", str(kubeconfig), "--listen", f"127.0.0.1:{port}",
         "--cert-dir", str(scratch / "guard-certs"), "--san", "127.0.0.1",
         "--config", str(config), "--log-level", "warning"],
        log="act1-guard.log",
    )  # fmt: skip
    return child, port


async def _drift(stage: Stage, run: scenarios.ScenarioRun, kubeconfig: Path) -> str:
    """At 4m30s: what happened so far, and ``kubemedic drift`` against Git. The pinned node."""
    teller = stage.teller
    teller.heading(f"[{clock(run.elapsed().total_seconds())}] What happened so far")
    for step in _told(run):
        teller.item(clock(step.elapsed.total_seconds()), step.text)
    application = _application(run)
    teller.item(
        "Argo CD",
        f"the Application argocd/{NAME} is {application} at commit "
        f"{(run.gitops.synced if run.gitops else None) or '?'}: Argo CD compares only the "
        "fields Git sets, and Git never had a nodeName",
    )
    teller.heading("What kubemedic sees: the live Deployment against Git, both ways")
    args = ["drift", "--kubeconfig", str(kubeconfig)]
    teller.command(["kubemedic", *args])
    with stage.progress.task("act 1: kubemedic drift against the Application's Git repository"):
        _, table, _ = await command(args, width=max(teller.console.width, WIDTH), ok=(0, 1))
        _, text, _ = await command([*args, "--output", "json"], ok=(1,))
    teller.raw(table, lines=25)
    report = json.loads(text)
    pinned = _drift_field(report, "spec.template.spec.nodeName")
    if pinned is None:
        raise DemoError("kubemedic drift did not report the template's nodeName at 4m30s")
    teller.item(
        "who and when",
        f"spec.template.spec.nodeName = {pinned.get('live')} is {pinned.get('kind')} (not in "
        f"Git); managedFields name {pinned.get('manager')} at {moment(pinned.get('time'))}: "
        "a person, not the GitOps tool",
    )
    return str(pinned.get("live"))


def _told(run: scenarios.ScenarioRun) -> list[Any]:
    """The timeline's actions done so far, without its marks (notes written for a storm nobody
    stops: "the storm is on" at 6m is not what happens here)."""
    timeline = run.scenario.timeline
    return [
        step
        for step in run.steps
        if step.index >= 0 and getattr(timeline[step.index], "action", "") != "mark"
    ]


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _application(run: scenarios.ScenarioRun) -> str:
    registry = run.sim.server.registry
    resource = registry.for_kind("argoproj.io/v1alpha1", "Application")
    if resource is None:
        return "unknown"
    found = run.sim.server.store.get(resource.store_key, ("argocd", NAME))
    status = ((found.obj if found else {}).get("status") or {}).get("sync") or {}
    return str(status.get("status") or "unknown")


def _drift_field(report: dict[str, Any], path: str) -> dict[str, Any] | None:
    for drifted in report.get("drift", []):
        if drifted["object"]["kind"] == "Deployment" and drifted["object"]["name"] == NAME:
            for field in drifted["drifts"]:
                if field["path"] == path:
                    found: dict[str, Any] = field
                    return found
    return None


def _storm(stage: Stage, run: scenarios.ScenarioRun) -> tuple[str, str]:
    """The storm as the cluster lived it and as the breaker decided it: (saw, did)."""
    teller = stage.teller
    teller.heading(f"[{clock(run.elapsed().total_seconds())}] The storm")
    for step in _told(run):
        if step.elapsed >= PAUSE:
            teller.item(clock(step.elapsed.total_seconds()), step.text)
    pods = [p for p in run.sim.objects("pods") if p["metadata"]["namespace"] == NAMESPACE]
    failed = sorted(
        str(p["metadata"]["creationTimestamp"])
        for p in pods
        if (p.get("status") or {}).get("phase") == "Failed"
    )
    deployment = run.sim.get("deployments.apps", NAMESPACE, NAME) or {}
    status = deployment.get("status") or {}
    template = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    with Archive.open(stage.url, migrate=False) as archive:
        decisions = archive.breaker_decisions(CLUSTER)
    storms = [d for d in decisions if d["reason"] == "KubemedicBreakerStorm"]
    reverts = [d for d in decisions if d["reason"] == "KubemedicBreakerRevertOutOfBand"]
    if not storms or not reverts:
        raise DemoError(
            f"the storm breaker did not act as expected: {len(storms)} storm and "
            f"{len(reverts)} revert decision(s) archived"
        )
    if failed:
        teller.item(
            "what happened",
            f"{len(failed)} pods rejected by the kubelet (Failed, OutOfmemory) between "
            f"{moment(failed[0])} and {moment(failed[-1])}, each replaced at once",
        )
    storm, revert = storms[0], reverts[0]
    teller.item(
        "what kubemedic saw", f"{moment(storm['at'])} {storm['reason']}: {storm['message']}"
    )
    teller.item(
        "what it did",
        f"{moment(revert['at'])} {revert['reason']} ({revert['outcome']}): {revert['message']}",
    )
    if failed:
        after = _seconds(failed[-1]) - float(revert["at"])
        teller.item(
            "the storm stopped",
            f"the last rejected pod was created at {moment(failed[-1])}, {max(after, 0):.0f} s "
            "of cluster time after the revert (the rollout replaced the pinned ReplicaSet)",
        )
    patch = json.dumps(revert.get("patch") or [])
    teller.item("the patch", f"{patch} (the first operation makes it fail if anyone wrote since)")
    wanted = (deployment.get("spec") or {}).get("replicas")
    available = f"{status.get('availableReplicas', 0)}/{wanted}"
    pinned = "still pinned" if "nodeName" in template else "no nodeName"
    teller.item("now", f"the Deployment has {available} replicas available, {pinned}")
    saw = (
        f"nodeName live-only, written by kubectl-edit; a Failed-pod storm of {len(failed)} "
        f"pods, detected at {moment(storm['at'])}"
    )
    did = (
        f"reverted nodeName at {moment(revert['at'])} ({revert['outcome']}); {available} available"
    )
    return saw, did


async def _guarded(
    stage: Stage,
    *,
    scratch: Path,
    kubeconfig: Path,
    api: str,
    guard: Child,
    port: int,
    node: str,
) -> str:
    """Register the guard's webhook and repeat the edit; what the user saw, in short."""
    teller = stage.teller
    teller.heading("The guard: the same edit again, with kubemedic guard in front")
    certs = scratch / "guard-certs"
    context = ssl.create_default_context(cafile=None)

    def healthy() -> bool:
        nonlocal context
        if not (certs / "ca.crt").exists():
            return False
        context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/healthz", context=context, timeout=2
            ) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    with stage.progress.task("act 1: waiting for the guard and registering its webhook"):
        await until(
            healthy, what="the guard answering /healthz", children=stage.children, blame=guard
        )
        render = ["guard", "render", "--url", f"https://127.0.0.1:{port}/validate",
                  "--cert-dir", str(certs), "--output", "json"]  # fmt: skip
        _, configuration, _ = await command(render)
        await asyncio.to_thread(_create_webhook, api, configuration)
    teller.command(["kubemedic", *render[:-2], "|", "kubectl", "apply", "-f", "-"])
    teller.said(
        "validatingwebhookconfiguration.admissionregistration.k8s.io/kubemedic-guard created",
        style="dim",
    )
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        editor = scratch / "editor"
        editor.write_text(EDITOR.format(python=sys.executable, node=node), encoding="utf-8")
        editor.chmod(0o700)
        args = ["edit", "deployment", NAME, "-n", NAMESPACE]
        teller.command(["kubectl", *args, f"   # adds nodeName: {node} again"])
        env = {"KUBECONFIG": str(kubeconfig), "KUBE_EDITOR": str(editor),
               "HOME": str(scratch), "TMPDIR": str(scratch)}  # fmt: skip
        status, out, err = await command(
            ["--kubeconfig", str(kubeconfig), *args], program=[kubectl], ok=(0, 1), env=env
        )
        teller.raw((out + err).strip())
        refused = status != 0 and "denied the request" in err
    else:
        teller.command(
            [f"PATCH {api}/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"
             "?fieldManager=kubectl-edit", f"   # kubectl edit's request: nodeName: {node}"]
        )  # fmt: skip
        message = await asyncio.to_thread(_patch, api, node)
        teller.raw(message)
        refused = "denied the request" in message
    if not refused:
        raise DemoError("the guard did not refuse the repeated edit")
    return "the guard refused the same edit again (admission webhook, policy deny)"


def _create_webhook(api: str, configuration: str) -> None:
    request = urllib.request.Request(  # noqa: S310 - the simulated API, over http
        f"{api}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        data=configuration.encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - the simulated API
        pass


def _patch(api: str, node: str) -> str:
    """The edit as kubectl sends it; the message a user would see."""
    body = {"spec": {"template": {"spec": {"nodeName": node}}}}
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"
    request = urllib.request.Request(  # noqa: S310 - the simulated API, over http
        f"{api}{path}?fieldManager=kubectl-edit",
        data=json.dumps(body).encode(),
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30):  # noqa: S310 - the simulated API
            return "deployment.apps/api-gateway edited"
    except urllib.error.HTTPError as error:
        status = json.loads(error.read() or b"{}")
        return f"error: {status.get('message', error.reason)}"


async def _incident(stage: Stage) -> str | None:
    """The storm's incident in the archive (``kubemedic incidents list``)."""
    listed = await stage.json("incidents", "list", "--cluster", CLUSTER)
    for found in listed.get("incidents", []):
        if found["kind"] == "incident" and "failed pod storm" in str(found.get("symptoms")):
            return str(found["id"])
    return None
