"""What the emulator writes is what a real API server would: official schemas, golden field sets."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from kubemedic.model.managedfields import decode_fieldsv1
from tests import paths
from tests.factories import container, deployment, node, pod
from tests.sim.conftest import Running
from tests.sim.manifests import manifest, pdb

SERVER_METADATA = (
    "metadata.name",
    "metadata.uid",
    "metadata.creationTimestamp",
    "metadata.resourceVersion",
    "metadata.selfLink",
)
PEER = paths.PEER / "structured-merge-diff"


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def _lease() -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "node-a", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 40},
    }


def _event() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Started",
        "message": "Started container web",
        "type": "Normal",
    }


CASES: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
    ("/api/v1/nodes", manifest(node("node-a"))),
    (
        "/api/v1/namespaces/default/pods",
        manifest(
            pod(
                "web",
                containers=[container("web", requests={"memory": "1Gi"}, limits={"cpu": "1"})],
            )
        ),
    ),
    ("/apis/apps/v1/namespaces/default/deployments", manifest(deployment("web", replicas=3))),
    ("/api/v1/namespaces/default/services", _service()),
    (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        pdb("web", min_available=1, labels={"app": "web"}),
    ),
    ("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", _lease()),
    ("/api/v1/namespaces/default/events", _event()),
]


@pytest.mark.parametrize(("path", "body"), CASES, ids=[b["kind"] for _, b in CASES])
def test_created_objects_validate_against_the_official_schema(
    emulator: Running, path: str, body: dict[str, Any]
) -> None:
    status, created, _ = emulator.request("POST", path + "?fieldValidation=Strict", body)
    assert status == 201, created
    status, stored, _ = emulator.request("GET", f"{path}/{created['metadata']['name']}")
    assert status == 200
    kubernetes_validate.validate(stored, "1.32.0", strict=True)


def test_events_k8s_io_view_validates_too(emulator: Running) -> None:
    emulator.request("POST", "/api/v1/namespaces/default/events", _event())
    status, ev, _ = emulator.request(
        "GET", "/apis/events.k8s.io/v1/namespaces/default/events/web.1"
    )
    assert status == 200
    assert ev["regarding"]["name"] == "web" and ev["note"] == "Started container web"
    kubernetes_validate.validate(ev, "1.32.0", strict=True)


@pytest.mark.skipif(not PEER.exists(), reason="recorded structured-merge-diff goldens not present")
@pytest.mark.parametrize(("source", "golden"), [("node.yaml", "nodeset.json")])
def test_creator_owns_the_golden_field_set(emulator: Running, source: str, golden: str) -> None:
    """A create through the HTTP API gives the creator exactly the golden field set (minus what
    the server strips: apiVersion, kind, and the identity metadata)."""
    obj = yaml.safe_load((PEER / source).read_text())
    obj["metadata"].pop("resourceVersion", None)
    obj["metadata"].pop("uid", None)
    obj["metadata"].pop("creationTimestamp", None)
    status, created, _ = emulator.request(
        "POST", "/api/v1/nodes?fieldManager=golden", obj, headers={"User-Agent": "test/1"}
    )
    assert status == 201, created
    entry = next(m for m in created["metadata"]["managedFields"] if m["manager"] == "golden")
    owned = decode_fieldsv1(entry["fieldsV1"])
    expected = decode_fieldsv1(yaml.safe_load((PEER / golden).read_text()))
    # The main resource never tracks status (it is reset for ownership), even on a Node, whose
    # create keeps the status it was given.
    stripped = {"apiVersion", "kind", "status"}
    expected = {
        p
        for p in expected
        if str(p).split(".")[0] not in stripped
        and not str(p).startswith(SERVER_METADATA)
        # An empty struct equals the kind's zero value: a create does not claim it.
        and str(p) not in ("metadata", "spec")
    }
    assert owned - {p for p in owned if str(p) == "metadata"} == expected
    assert (
        created["status"]["nodeInfo"]["kubeletVersion"]
        == obj["status"]["nodeInfo"]["kubeletVersion"]
    )
