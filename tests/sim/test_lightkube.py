"""lightkube (the client kubemedic itself uses) against the emulator."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from lightkube import ApiError, AsyncClient, Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.generic_resource import get_generic_resource, load_in_cluster_generic_resources
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Node, Pod
from lightkube.types import CascadeType, PatchType

from tests.sim.conftest import Running
from tests.sim.manifests import pdb, ready_node, running_pod, web_deployment


@pytest.fixture
def client(emulator: Running) -> Iterator[Client]:
    c = Client(config=KubeConfig.from_file(emulator.kubeconfig), field_manager="lightkube-test")
    yield c
    c.close()


def _configmap(name: str, **labels: str) -> ConfigMap:
    return ConfigMap(
        metadata=ObjectMeta(name=name, namespace="default", labels=labels), data={"k": "v"}
    )


def test_create_get_list_with_selectors_and_pagination(client: Client) -> None:
    for i in range(25):
        client.create(_configmap(f"cm-{i:02d}", tier="a" if i % 2 else "b"))
    got = client.get(ConfigMap, "cm-03", namespace="default")
    assert got.metadata is not None and got.metadata.uid
    everything = list(client.list(ConfigMap, namespace="default", chunk_size=7))
    assert len(everything) == 25
    odd = list(client.list(ConfigMap, namespace="default", labels={"tier": "a"}))
    assert sorted(c.metadata.name for c in odd if c.metadata) == [
        f"cm-{i:02d}" for i in range(1, 25, 2)
    ]
    named = list(client.list(ConfigMap, namespace="default", fields={"metadata.name": "cm-10"}))
    assert [c.metadata.name for c in named if c.metadata] == ["cm-10"]


def test_not_found_and_already_exists_are_real_status_errors(client: Client) -> None:
    with pytest.raises(ApiError) as missing:
        client.get(ConfigMap, "nope", namespace="default")
    assert missing.value.status.code == 404
    assert missing.value.status.reason == "NotFound"
    assert missing.value.status.message == 'configmaps "nope" not found'
    client.create(_configmap("dup"))
    with pytest.raises(ApiError) as dup:
        client.create(_configmap("dup"))
    assert dup.value.status.code == 409 and dup.value.status.reason == "AlreadyExists"


def test_stale_resource_version_is_a_conflict(client: Client) -> None:
    created = client.create(_configmap("cm"))
    created.data = {"k": "v2"}
    client.replace(created)
    created.data = {"k": "v3"}
    with pytest.raises(ApiError) as conflict:
        client.replace(created)  # still carries the first resourceVersion
    assert conflict.value.status.code == 409
    assert "the object has been modified" in (conflict.value.status.message or "")


def test_patch_types_and_server_side_apply(client: Client) -> None:
    client.create(Deployment.from_dict(web_deployment("web")))
    client.patch(Deployment, "web", {"spec": {"replicas": 4}}, namespace="default")
    client.patch(
        Deployment, "web", {"metadata": {"labels": {"x": "y"}}}, namespace="default",
        patch_type=PatchType.MERGE,
    )  # fmt: skip
    client.patch(
        Deployment, "web", [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}],
        namespace="default", patch_type=PatchType.JSON,
    )  # fmt: skip
    got = client.get(Deployment, "web", namespace="default")
    assert got.spec is not None and got.spec.replicas == 4
    assert got.metadata is not None and got.metadata.labels and got.metadata.labels["x"] == "y"
    assert got.metadata.annotations == {"a": "b"}
    applied = client.patch(
        Deployment,
        "web",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 6},
        },
        namespace="default",
        patch_type=PatchType.APPLY,
        field_manager="gitops",
        force=True,
    )
    assert applied.spec is not None and applied.spec.replicas == 6
    managers = {m.manager: m for m in applied.metadata.managedFields or []}  # type: ignore[union-attr]
    assert managers["gitops"].operation == "Apply"


def test_scale_and_status_subresources(client: Client, emulator: Running) -> None:
    client.create(Deployment.from_dict(web_deployment("web")))
    scale = client.get(Deployment.Scale, "web", namespace="default")
    assert scale.spec is not None and scale.spec.replicas == 2
    scale.spec.replicas = 9
    client.replace(scale)
    assert client.get(Deployment, "web", namespace="default").spec.replicas == 9  # type: ignore[union-attr]
    # A status write does not touch the spec, a spec write does not touch the status.
    client.patch(
        Deployment.Status,
        "web",
        {"status": {"replicas": 9, "readyReplicas": 9}},
        namespace="default",
        patch_type=PatchType.MERGE,
    )
    client.patch(
        Deployment,
        "web",
        {"status": {"readyReplicas": 1}},
        namespace="default",
        patch_type=PatchType.MERGE,
    )
    got = client.get(Deployment, "web", namespace="default")
    assert got.status is not None and got.status.readyReplicas == 9


def test_watch_from_a_resource_version_sees_later_changes(
    client: Client, emulator: Running
) -> None:
    first = client.create(_configmap("before"))
    assert first.metadata is not None
    start = first.metadata.resourceVersion
    client.create(_configmap("after"))
    client.delete(ConfigMap, "before", namespace="default")
    seen = []
    for kind, obj in client.watch(ConfigMap, namespace="default", resource_version=start):
        seen.append((kind, obj.metadata.name if obj.metadata else None))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", "after"), ("DELETED", "before")]


def test_eviction_honours_the_budget(client: Client, emulator: Running) -> None:
    labels = {"app": "db"}
    emulator.load(
        ready_node("node-a"),
        running_pod("db-0", labels=labels),
        running_pod("db-1", labels=labels),
        pdb("db", min_available=1, labels=labels),
    )

    def evict(name: str) -> None:
        client.create(
            Pod.Eviction(metadata=ObjectMeta(name=name, namespace="default")),  # type: ignore[attr-defined]
            name=name,
            namespace="default",
        )

    evict("db-0")
    with pytest.raises(ApiError) as refused:
        evict("db-1")
    status = refused.value.status
    assert status.code == 429
    assert status.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status.details is not None and status.details.causes
    assert status.details.causes[0].reason == "DisruptionBudget"
    assert "needs 1 healthy pods and has 1 currently" in (status.details.causes[0].message or "")


def test_cluster_api_generic_resources_from_crds(client: Client) -> None:
    load_in_cluster_generic_resources(client)
    machine = get_generic_resource("cluster.x-k8s.io/v1beta1", "Machine")
    assert machine is not None
    client.create(
        machine(metadata=ObjectMeta(name="m-1", namespace="default"), spec={"clusterName": "c1"})
    )
    got = client.get(machine, "m-1", namespace="default")
    assert got.spec == {"clusterName": "c1"}


def test_cascading_delete_through_lightkube(client: Client) -> None:
    owner = client.create(_configmap("owner"))
    assert owner.metadata is not None
    dependent = _configmap("dependent")
    assert dependent.metadata is not None
    dependent.metadata.ownerReferences = [  # type: ignore[assignment]
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    ]
    client.create(dependent)
    client.delete(ConfigMap, "owner", namespace="default", cascade=CascadeType.BACKGROUND)
    names = {c.metadata.name for c in client.list(ConfigMap, namespace="default") if c.metadata}
    assert "dependent" not in names


def test_async_client_lists_nodes(emulator: Running) -> None:
    emulator.load(ready_node("node-a"), ready_node("node-b"))

    async def main() -> list[str]:
        client = AsyncClient(config=KubeConfig.from_file(emulator.kubeconfig))
        try:
            return [n.metadata.name async for n in client.list(Node) if n.metadata]  # type: ignore[misc]
        finally:
            await client.close()

    assert sorted(asyncio.run(main())) == ["node-a", "node-b"]


def test_drain_flow_cordon_list_evict_wait(client: Client, emulator: Running) -> None:
    """What a repair controller does with lightkube: cordon, list the node's pods, evict each,
    and wait until they are gone (they go when their grace period ends)."""
    labels = {"app": "web"}
    emulator.load(
        ready_node("node-a"),
        running_pod("web-0", labels=labels),
        running_pod("web-1", labels=labels),
        pdb("web", min_available=1, labels=labels),
    )
    client.patch(Node, "node-a", {"spec": {"unschedulable": True}})
    on_node = list(client.list(Pod, namespace="*", fields={"spec.nodeName": "node-a"}))
    assert sorted(p.metadata.name for p in on_node if p.metadata) == ["web-0", "web-1"]
    evicted, refused = [], []
    for victim in on_node:
        assert victim.metadata is not None and victim.metadata.name is not None
        try:
            client.create(
                Pod.Eviction(metadata=ObjectMeta(name=victim.metadata.name, namespace="default")),  # type: ignore[attr-defined]
                name=victim.metadata.name,
                namespace="default",
            )
            evicted.append(victim.metadata.name)
        except ApiError as exc:
            refused.append((victim.metadata.name, exc.status.code))
    assert evicted == ["web-0"] and refused == [("web-1", 429)]
    # The evicted pod is terminating for its grace period, then gone.
    terminating = client.get(Pod, "web-0", namespace="default")
    assert terminating.metadata is not None and terminating.metadata.deletionTimestamp
    emulator.request("PUT", "/kubemedic.io/v1/clock", {"advanceSeconds": 31})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        names = {p.metadata.name for p in client.list(Pod, namespace="default") if p.metadata}
        if "web-0" not in names:
            break
        time.sleep(0.05)
    assert names == {"web-1"}
    assert client.get(Node, "node-a").spec.unschedulable is True  # type: ignore[union-attr]


def test_wait_for_a_condition(client: Client, emulator: Running) -> None:
    emulator.load(ready_node("node-a"))
    node = client.wait(Node, "node-a", for_conditions=["Ready"])
    assert node.metadata is not None and node.metadata.name == "node-a"


@pytest.mark.parametrize(
    ("cascade", "left"),
    [(CascadeType.FOREGROUND, set()), (CascadeType.ORPHAN, {"dependent"})],
)
def test_foreground_and_orphan_deletes(
    client: Client, cascade: CascadeType, left: set[str]
) -> None:
    owner = client.create(_configmap("owner"))
    assert owner.metadata is not None
    dependent = _configmap("dependent")
    assert dependent.metadata is not None
    dependent.metadata.ownerReferences = [  # type: ignore[assignment]
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid,
         "blockOwnerDeletion": True}
    ]  # fmt: skip
    client.create(dependent)
    client.delete(ConfigMap, "owner", namespace="default", cascade=cascade)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        names = {c.metadata.name for c in client.list(ConfigMap, namespace="default") if c.metadata}
        names.discard("kube-root-ca.crt")
        if names == left:
            break
        time.sleep(0.05)
    assert names == left
    if left:
        kept = client.get(ConfigMap, "dependent", namespace="default")
        assert kept.metadata is not None and not kept.metadata.ownerReferences
