"""The real kubectl against the emulator: every everyday flow works unchanged."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.sim.conftest import KUBECTL, Running, kubectl_editor, needs_kubectl
from tests.sim.manifests import pdb, ready_node, running_pod, to_yaml, web_deployment

pytestmark = needs_kubectl


def _json(result: subprocess.CompletedProcess[str]) -> dict:
    return json.loads(result.stdout)


def _background(emulator: Running, *args: str) -> subprocess.Popen[str]:
    """kubectl running beside the test (a watch or a wait)."""
    command = [KUBECTL or "kubectl", "--kubeconfig", str(emulator.kubeconfig), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _configmap(name: str) -> dict:
    # Sent as JSON by ``create -f``; the generator commands' protobuf has its own tests
    # (tests/sim/test_kubectl_create.py).
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}


def _apply(emulator: Running, tmp_path: Path, *objs: dict, extra: tuple[str, ...] = ()) -> str:
    file = tmp_path / "manifest.yaml"
    file.write_text(to_yaml(*objs))
    return emulator.kubectl("apply", "-f", str(file), *extra).stdout


def test_api_resources_lists_short_names_scopes_and_cluster_api(emulator: Running) -> None:
    out = emulator.kubectl("api-resources", "--no-headers").stdout
    rows = {(line.split()[0], line.split()[-3]): line.split() for line in out.splitlines()}
    assert rows[("pods", "v1")][1:] == ["po", "v1", "true", "Pod"]
    assert rows[("nodes", "v1")][1:] == ["no", "v1", "false", "Node"]
    assert rows[("deployments", "apps/v1")][1:] == ["deploy", "apps/v1", "true", "Deployment"]
    assert rows[("machines", "cluster.x-k8s.io/v1beta1")][1] == "ma"
    assert ("poddisruptionbudgets", "policy/v1") in rows
    assert ("pods", "metrics.k8s.io/v1beta1") in rows
    assert ("events", "events.k8s.io/v1") in rows


def test_client_side_apply_then_get_by_short_name_and_selector(
    emulator: Running, tmp_path: Path
) -> None:
    out = _apply(emulator, tmp_path, web_deployment("web"), web_deployment("api"))
    assert "deployment.apps/web created" in out
    got = _json(
        emulator.kubectl(
            "get",
            "deploy",
            "-l",
            "app.kubernetes.io/name in (web)",
            "-o",
            "json",
            "--show-managed-fields",
        )
    )
    assert [i["metadata"]["name"] for i in got["items"]] == ["web"]
    web = got["items"][0]
    # Defaults the real server fills in are there, and the apply annotation kubectl keeps.
    assert web["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == "25%"
    assert "kubectl.kubernetes.io/last-applied-configuration" in web["metadata"]["annotations"]
    managers = {m["manager"]: m for m in web["metadata"]["managedFields"]}
    assert managers["kubectl-client-side-apply"]["operation"] == "Update"
    # A second apply with a change is a strategic-merge PATCH.
    changed = web_deployment("web", replicas=5)
    out = _apply(emulator, tmp_path, changed)
    assert "deployment.apps/web configured" in out
    got = _json(emulator.kubectl("get", "deployment", "web", "-o", "json"))
    assert got["spec"]["replicas"] == 5
    assert got["metadata"]["generation"] == 2


def test_table_output_has_the_real_columns(emulator: Running, tmp_path: Path) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    out = emulator.kubectl("get", "deployments").stdout
    header = out.splitlines()[0].split()
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert out.splitlines()[1].split()[:2] == ["web", "0/2"]


def test_yaml_output_round_trips(emulator: Running, tmp_path: Path) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    body = yaml.safe_load(emulator.kubectl("get", "deploy", "web", "-o", "yaml").stdout)
    assert body["kind"] == "Deployment" and body["apiVersion"] == "apps/v1"
    assert int(body["metadata"]["resourceVersion"]) > 0


def test_server_side_apply_conflict_then_force(emulator: Running, tmp_path: Path) -> None:
    _apply(
        emulator,
        tmp_path,
        web_deployment("web"),
        extra=("--server-side", "--field-manager=argocd-controller"),
    )
    emulator.kubectl("scale", "deployment/web", "--replicas=3")
    failed = emulator.kubectl(
        "apply", "-f", str(tmp_path / "manifest.yaml"), "--server-side",
        "--field-manager=argocd-controller", check=False,
    )  # fmt: skip
    assert failed.returncode != 0
    assert "conflict" in failed.stderr.lower() and ".spec.replicas" in failed.stderr
    emulator.kubectl(
        "apply", "-f", str(tmp_path / "manifest.yaml"), "--server-side",
        "--field-manager=argocd-controller", "--force-conflicts",
    )  # fmt: skip
    got = _json(emulator.kubectl("get", "deploy", "web", "-o", "json", "--show-managed-fields"))
    assert got["spec"]["replicas"] == 2
    owners = {m["manager"] for m in got["metadata"]["managedFields"]}
    assert "argocd-controller" in owners


def test_kubectl_edit_adding_node_name_leaves_a_kubectl_edit_owner(
    emulator: Running, tmp_path: Path
) -> None:
    """Incident 1: the edit Argo CD never saw, recorded in managedFields."""
    _apply(
        emulator,
        tmp_path,
        web_deployment("web"),
        extra=("--server-side", "--field-manager=argocd-controller"),
    )
    env = kubectl_editor(tmp_path, "doc['spec']['template']['spec']['nodeName'] = 'node-7'")
    emulator.kubectl("edit", "deployment", "web", env=env)
    got = _json(emulator.kubectl("get", "deploy", "web", "-o", "json", "--show-managed-fields"))
    assert got["spec"]["template"]["spec"]["nodeName"] == "node-7"
    edit = [m for m in got["metadata"]["managedFields"] if m["manager"] == "kubectl-edit"]
    assert len(edit) == 1
    assert edit[0]["operation"] == "Update"
    assert edit[0]["fieldsV1"] == {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}
    argo = next(m for m in got["metadata"]["managedFields"] if m["manager"] == "argocd-controller")
    assert "f:nodeName" not in json.dumps(argo["fieldsV1"])


@pytest.mark.parametrize(
    ("kind", "patch", "expect"),
    [
        (
            "strategic",
            '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:2"}]}}}}',
            "web:2",
        ),
        (
            "merge",
            '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:3"}]}}}}',
            "web:3",
        ),
        (
            "json",
            '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"web:4"}]',
            "web:4",
        ),
    ],
)
def test_patch_types(emulator: Running, tmp_path: Path, kind: str, patch: str, expect: str) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    emulator.kubectl("patch", "deployment", "web", "--type", kind, "-p", patch)
    got = _json(emulator.kubectl("get", "deploy", "web", "-o", "json"))
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == expect


def test_strict_field_validation_rejects_unknown_fields(emulator: Running, tmp_path: Path) -> None:
    bad = web_deployment("web")
    bad["spec"]["replicaz"] = 3
    file = tmp_path / "bad.yaml"
    file.write_text(to_yaml(bad))
    result = emulator.kubectl("apply", "-f", str(file), check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.replicaz"' in result.stderr


def test_scale_and_label(emulator: Running, tmp_path: Path) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    emulator.kubectl("scale", "deployment", "web", "--replicas=7")
    emulator.kubectl("label", "deployment", "web", "team=payments")
    got = _json(emulator.kubectl("get", "deploy", "web", "-o", "json"))
    assert got["spec"]["replicas"] == 7
    assert got["metadata"]["labels"]["team"] == "payments"
    by_label = _json(emulator.kubectl("get", "deploy", "-l", "team=payments", "-o", "json"))
    assert len(by_label["items"]) == 1
    assert (
        _json(emulator.kubectl("get", "deploy", "-l", "team!=payments", "-o", "json"))["items"]
        == []
    )


def test_cordon_and_drain_respect_a_disruption_budget(emulator: Running) -> None:
    labels = {"app": "zk"}
    emulator.load(
        ready_node("node-a"),
        ready_node("node-b"),
        running_pod("zk-0", node_name="node-a", labels=labels),
        running_pod("zk-1", node_name="node-a", labels=labels),
        running_pod("zk-2", node_name="node-b", labels=labels),
        pdb("zk", min_available=2, labels=labels),
    )
    emulator.kubectl("cordon", "node-a")
    got = _json(emulator.kubectl("get", "node", "node-a", "-o", "json"))
    assert got["spec"]["unschedulable"] is True
    # Two of three may not go: the second eviction is refused (429) until the timeout.
    result = emulator.kubectl(
        "drain",
        "node-a",
        "--ignore-daemonsets",
        "--force",
        "--grace-period=0",
        "--timeout=4s",
        check=False,
    )
    assert result.returncode != 0
    assert "disruption budget" in result.stderr
    left = _json(
        emulator.kubectl("get", "pods", "--field-selector", "spec.nodeName=node-a", "-o", "json")
    )
    assert len(left["items"]) == 1
    # With the budget relaxed the drain completes.
    emulator.kubectl("patch", "pdb", "zk", "--type", "merge", "-p", '{"spec":{"minAvailable":1}}')
    emulator.kubectl(
        "drain", "node-a", "--ignore-daemonsets", "--force", "--grace-period=0", "--timeout=20s"
    )
    left = _json(
        emulator.kubectl("get", "pods", "--field-selector", "spec.nodeName=node-a", "-o", "json")
    )
    assert left["items"] == []


def _owned_replicaset(emulator: Running, tmp_path: Path) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    deploy = _json(emulator.kubectl("get", "deploy", "web", "-o", "json"))
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-5d4f",
            "namespace": "default",
            "labels": {"app.kubernetes.io/name": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": deploy["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": deploy["spec"]["template"]
        and {
            "replicas": 1,
            "selector": deploy["spec"]["selector"],
            "template": deploy["spec"]["template"],
        },
    }
    file = tmp_path / "rs.yaml"
    file.write_text(yaml.safe_dump(rs))
    emulator.kubectl("create", "-f", str(file))


@pytest.mark.parametrize(
    ("cascade", "rs_left"), [("background", 0), ("foreground", 0), ("orphan", 1)]
)
def test_delete_cascade(emulator: Running, tmp_path: Path, cascade: str, rs_left: int) -> None:
    _owned_replicaset(emulator, tmp_path)
    emulator.kubectl(
        "delete", "deployment", "web", f"--cascade={cascade}", "--wait=true", "--timeout=20s"
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        items = _json(emulator.kubectl("get", "rs", "-o", "json"))["items"]
        if len(items) == rs_left:
            break
        time.sleep(0.1)
    assert len(items) == rs_left
    if rs_left:
        assert "ownerReferences" not in items[0]["metadata"]


def test_wait_for_delete_and_condition(emulator: Running) -> None:
    emulator.load(ready_node("node-a"))
    proc = _background(emulator, "wait", "node/node-a", "--for=condition=Ready", "--timeout=20s")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "condition met" in out
    emulator.kubectl("create", "-f", "-", input=json.dumps(_configmap("gone-soon")))
    waiter = _background(emulator, "wait", "configmap/gone-soon", "--for=delete", "--timeout=20s")
    time.sleep(1.0)
    emulator.kubectl("delete", "configmap", "gone-soon")
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 0, err


def test_get_watch_streams_changes(emulator: Running) -> None:
    watcher = _background(
        emulator,
        "get",
        "configmaps",
        "--watch",
        "--output-watch-events",
        "-o",
        'jsonpath={.type} {.object.metadata.name}{"\\n"}',
        "--request-timeout=8s",
    )
    time.sleep(1.5)
    emulator.kubectl("create", "-f", "-", input=json.dumps(_configmap("seen")))
    emulator.kubectl("label", "configmap", "seen", "x=y")
    emulator.kubectl("delete", "configmap", "seen")
    out, _ = watcher.communicate(timeout=30)
    lines = [line.split() for line in out.splitlines() if "seen" in line]
    assert [kind for kind, _ in lines] == ["ADDED", "MODIFIED", "DELETED"]


def test_describe_shows_events_about_the_object(emulator: Running) -> None:
    emulator.load(
        ready_node("node-a"), running_pod("api-0", node_name="node-a", labels={"app": "api"})
    )
    uid = _json(emulator.kubectl("get", "pod", "api-0", "-o", "json"))["metadata"]["uid"]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "api-0.1", "namespace": "default"},
        "involvedObject": {
            "kind": "Pod",
            "name": "api-0",
            "namespace": "default",
            "apiVersion": "v1",
            "uid": uid,
        },
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "type": "Warning",
        "count": 3,
    }
    emulator.kubectl("create", "-f", "-", input=json.dumps(event))
    out = emulator.kubectl("describe", "pod", "api-0").stdout
    assert "Back-off restarting failed container" in out
    assert "node-a" in out


def test_diff_reports_a_change_with_exit_code_one(emulator: Running, tmp_path: Path) -> None:
    _apply(emulator, tmp_path, web_deployment("web"))
    file = tmp_path / "changed.yaml"
    file.write_text(to_yaml(web_deployment("web", replicas=4)))
    same = emulator.kubectl("diff", "-f", str(tmp_path / "manifest.yaml"), check=False)
    assert same.returncode == 0, same.stderr
    changed = emulator.kubectl("diff", "-f", str(file), check=False)
    assert changed.returncode == 1, changed.stderr
    assert "+  replicas: 4" in changed.stdout
