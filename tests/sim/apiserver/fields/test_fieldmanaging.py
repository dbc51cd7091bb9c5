"""Ownership tracking on updates, held to structured-merge-diff's golden sets and to what a real
API server records (creates, edits, status writes, client-sent managedFields, manager names)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import decode_fieldsv1
from kubemedic.sim.apiserver.fields import applying, fieldmanaging, fieldsets
from kubemedic.sim.apiserver.fields.fieldmanaging import (
    STRIPPED_FIELDS,
    manager_name,
    track_update,
    validate_field_manager,
)
from kubemedic.sim.machinery.definitions import SchemaNode, definitions
from kubemedic.sim.machinery.errors import StatusError
from tests import paths
from tests.factories import container, deployment
from tests.sim.manifests import manifest


def object_fieldset(obj: Obj, schema: SchemaNode | None, *, strip: bool = True) -> set[FieldPath]:
    """The fields of ``obj`` (``Compare(nothing, obj).Added``): what it would give a manager
    creating it from nothing, without the stripped fields unless ``strip`` is off."""
    added = fieldsets.compare(fieldsets.ABSENT, obj, schema).added
    return added - fieldmanaging.STRIPPED_FIELDS if strip else added


Obj = dict[str, Any]

PEER = paths.PEER / "structured-merge-diff"
needs_peer = pytest.mark.skipif(not PEER.is_dir(), reason=f"golden files not found at {PEER}")

DEPLOYMENT = definitions().for_kind("apps", "v1", "Deployment")
CREATED, SYNCED, EDITED, LATER = (
    "2024-05-01T10:00:00Z",
    "2024-05-01T11:00:00Z",
    "2024-05-02T09:30:00Z",
    "2024-05-03T08:00:00Z",
)


def paths(*texts: str) -> set[FieldPath]:
    return {FieldPath.parse(text) for text in texts}


def web(image: str = "nginx:1.25") -> Obj:
    """What a GitOps controller creates: the Deployment ``web`` in ``shop``, defaulted."""
    body = manifest(deployment("web", namespace="shop", containers=[container("web", image=image)]))
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 8080, "protocol": "TCP"}
    ]
    return body


def created(manager: str = "argocd-controller", *, body: Obj | None = None) -> Obj:
    """``web()`` created by ``manager``, as stored (the create strategy sets ``status: {}``)."""
    obj = body if body is not None else web()
    obj["status"] = {}
    track_update(
        old=None, new=obj, manager=manager, time=CREATED, api_version="apps/v1", schema=DEPLOYMENT
    )
    obj["metadata"]["uid"] = "0b6e4c1a-9a53-4a4e-8d0a-5f0c6f1c2d3e"
    return obj


def written(
    live: Obj,
    change: Callable[[Obj], None],
    *,
    manager: str,
    at: str,
    subresource: str = "",
) -> Obj:
    new = copy.deepcopy(live)
    change(new)
    track_update(
        old=live,
        new=new,
        manager=manager,
        subresource=subresource,
        time=at,
        api_version="apps/v1",
        schema=DEPLOYMENT,
    )
    return new


def entry(obj: Obj, manager: str, *, operation: str = "Update", subresource: str = "") -> Obj:
    found = [
        e
        for e in obj["metadata"].get("managedFields", [])
        if (e.get("manager"), e["operation"], e.get("subresource", ""))
        == (manager, operation, subresource)
    ]
    assert len(found) == 1, f"{manager}/{operation}/{subresource}: {found}"
    return found[0]


def owned(obj: Obj, manager: str, **identity: str) -> set[FieldPath]:
    return set(decode_fieldsv1(entry(obj, manager, **identity)["fieldsV1"]))


def managers(obj: Obj) -> list[str]:
    return [e.get("manager", "") for e in obj["metadata"].get("managedFields", [])]


def set_node_name(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["nodeName"] = "node-3"


# --- golden field sets -----------------------------------------------------------------------


def golden(name: str) -> tuple[Obj, set[FieldPath]]:
    obj = yaml.safe_load((PEER / f"{name}.yaml").read_text())
    fields = json.loads((PEER / f"{name}set.json").read_text())
    return obj, set(decode_fieldsv1(fields))


def fold_atomic(fieldset: set[FieldPath], schema: SchemaNode) -> set[FieldPath]:
    """``fieldset`` with everything below a node the schema calls atomic removed."""

    def below_atomic(path: FieldPath) -> bool:
        node: SchemaNode | None = schema
        for element in path.elements[:-1]:
            if node is None:
                return False
            if node.kind == "list":
                node = node.items
            elif node.kind == "struct":
                node = node.field(element.field_name)
            else:
                node = node.values
            if node is not None and (node.map_type == "atomic" and node.kind == "struct"):
                return True
        return False

    return {path for path in fieldset if not below_atomic(path)}


@needs_peer
@pytest.mark.parametrize("name", ["node", "endpoints"])
def test_fieldset_of_an_object_equals_the_structured_merge_diff_golden_set(name: str) -> None:
    obj, expected = golden(name)
    schema = definitions().for_kind("", "v1", obj["kind"])
    assert object_fieldset(obj, schema, strip=False) == expected


@needs_peer
def test_pod_fieldset_matches_the_golden_set_where_the_schemas_agree() -> None:
    """The golden's ``k8s-schema.yaml`` predates ``structType=atomic`` on ``OwnerReference`` and
    ``SecretKeySelector``; Kubernetes 1.32 owns each as one leaf, so their fields fold away."""
    obj, expected = golden("pod")
    schema = definitions().for_kind("", "v1", "Pod")
    assert schema is not None
    got = object_fieldset(obj, schema, strip=False)
    folded = fold_atomic(expected, schema)
    assert got == folded
    assert {str(p) for p in expected - folded} == {
        *(
            f"metadata.ownerReferences[uid=0a9d2b9e-779e-11e7-b422-42010a8001be].{f}"
            for f in ("apiVersion", "blockOwnerDeletion", "controller", "kind", "name", "uid")
        ),
        *(
            f"spec.containers[name=some-name].env[name={var}].valueFrom.secretKeyRef.{f}"
            for var in ("VAR_1", "VAR_2", "VAR_3")
            for f in ("key", "name")
        ),
    }


@needs_peer
def test_fieldset_leaves_out_what_the_api_server_never_tracks() -> None:
    obj, expected = golden("node")
    schema = definitions().for_kind("", "v1", "Node")
    tracked = object_fieldset(obj, schema)
    assert tracked == expected - STRIPPED_FIELDS
    assert paths("apiVersion", "kind", "metadata.name", "metadata.uid") & tracked == set()
    assert paths("metadata.labels", "metadata.annotations") <= tracked


# --- the incident: kubectl edit adds nodeName to a GitOps-managed Deployment ------------------


@pytest.mark.parametrize("operation", ["Update", "Apply"])
def test_kubectl_edit_adding_node_name_owns_exactly_that_field(operation: str) -> None:
    if operation == "Update":
        live = created("argocd-controller")
    else:
        live = applying.apply(
            live=None,
            applied=web(),
            manager="argocd-controller",
            force=True,
            time=CREATED,
            api_version="apps/v1",
            schema=DEPLOYMENT,
        )
        live["metadata"]["uid"] = "0b6e4c1a-9a53-4a4e-8d0a-5f0c6f1c2d3e"
    argo_before = entry(live, "argocd-controller", operation=operation)

    edited = written(live, set_node_name, manager="kubectl-edit", at=EDITED)

    edit = entry(edited, "kubectl-edit")
    assert edit["fieldsV1"] == {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}
    assert edit["time"] == EDITED
    assert edit["apiVersion"] == "apps/v1"
    assert entry(edited, "argocd-controller", operation=operation) == argo_before
    assert FieldPath.parse("spec.template.spec.nodeName") not in owned(
        edited, "argocd-controller", operation=operation
    )


def test_a_created_object_belongs_to_its_creator_with_the_real_servers_markers() -> None:
    """Compared with the Go zero value, as the API server does: ``spec``, ``spec.template`` and
    ``containers`` exist before anyone sets them (no ``"."``), labels and ports do not."""
    live = created("argocd-controller")
    fields = entry(live, "argocd-controller")["fieldsV1"]
    template = fields["f:spec"]["f:template"]
    assert "." not in fields["f:spec"]
    assert "." not in template and "." not in template["f:spec"]["f:containers"]
    assert template["f:metadata"]["f:labels"] == {".": {}, "f:app.kubernetes.io/name": {}}
    item = template["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert item["f:ports"] == {
        ".": {},
        'k:{"containerPort":8080,"protocol":"TCP"}': {
            ".": {},
            "f:containerPort": {},
            "f:protocol": {},
        },
    }
    assert item["f:resources"] == {}
    assert set(fields) == {"f:metadata", "f:spec"}  # no identity metadata, no status


def test_changing_a_value_another_manager_owns_moves_the_field() -> None:
    live = created()

    def bump(obj: Obj) -> None:
        obj["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"

    edited = written(live, bump, manager="kubectl-edit", at=EDITED)
    image = FieldPath.parse('spec.template.spec.containers[name="web"].image')
    assert owned(edited, "kubectl-edit") == {image}
    assert image not in owned(edited, "argocd-controller")
    assert FieldPath.parse('spec.template.spec.containers[name="web"].name') in owned(
        edited, "argocd-controller"
    )


def test_removing_a_field_removes_it_from_every_owner() -> None:
    live = written(
        created(),
        lambda o: o["metadata"]["labels"].update(team="payments"),
        manager="kubectl-label",
        at=SYNCED,
    )
    team = FieldPath.parse("metadata.labels.team")
    assert owned(live, "kubectl-label") == {team}

    cleared = written(
        live, lambda o: o["metadata"]["labels"].pop("team"), manager="kubectl-edit", at=EDITED
    )
    assert "kubectl-label" not in managers(cleared)  # left with nothing: gone
    assert "kubectl-edit" not in managers(cleared)  # removing gives nothing to own
    assert team not in owned(cleared, "argocd-controller")


def test_status_writes_land_in_a_status_entry_and_never_touch_spec_owners() -> None:
    live = created()

    def report(obj: Obj) -> None:
        obj["status"] = {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}

    reported = written(
        live, report, manager="kube-controller-manager", at=SYNCED, subresource="status"
    )
    assert owned(reported, "kube-controller-manager", subresource="status") == paths(
        "status.replicas",
        "status.conditions",
        "status.conditions[type=Available]",
        "status.conditions[type=Available].type",
        "status.conditions[type=Available].status",
    )
    assert entry(reported, "argocd-controller") == entry(live, "argocd-controller")


def test_status_sent_to_the_main_resource_is_not_tracked() -> None:
    live = created()
    updated = written(
        live, lambda o: o.update(status={"replicas": 5}), manager="some-client", at=EDITED
    )
    assert "some-client" not in managers(updated)


def test_a_write_that_changes_nothing_keeps_managed_fields_and_times() -> None:
    live = created()
    again = written(live, lambda o: None, manager="argocd-controller", at=LATER)
    assert again["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_the_writers_time_moves_only_when_it_gains_fields() -> None:
    live = written(created(), set_node_name, manager="kubectl-edit", at=EDITED)

    def bump_replicas(obj: Obj) -> None:
        obj["spec"]["replicas"] = 3

    later = written(live, bump_replicas, manager="argocd-controller", at=LATER)
    assert entry(later, "argocd-controller")["time"] == LATER
    assert entry(later, "kubectl-edit")["time"] == EDITED


def test_entries_are_ordered_apply_first_then_by_time() -> None:
    live = applying.apply(
        live=None,
        applied=web(),
        manager="zz-applier",
        force=False,
        time=LATER,
        api_version="apps/v1",
        schema=DEPLOYMENT,
    )
    live["metadata"]["uid"] = "uid"
    live = written(live, set_node_name, manager="b-editor", at=EDITED)
    live = written(
        live, lambda o: o["metadata"]["labels"].update(x="1"), manager="a-labeler", at=LATER
    )
    assert managers(live) == ["zz-applier", "b-editor", "a-labeler"]


def test_more_than_ten_update_managers_fold_the_oldest_into_ancient_changes() -> None:
    live = created()
    for i in range(11):
        live = written(
            live,
            lambda o, i=i: o["metadata"]["labels"].update({f"l{i}": "x"}),
            manager=f"m{i:02d}",
            at=f"2024-06-01T00:00:{i:02d}Z",
        )
    names = managers(live)
    assert len(names) == 10
    assert "ancient-changes" in names
    assert {"argocd-controller", "m00", "m01"}.isdisjoint(names)
    assert FieldPath.parse("metadata.labels.l0") in owned(live, "ancient-changes")


# --- managedFields sent by clients ------------------------------------------------------------


@pytest.mark.parametrize("reset", [[], [{}]])
def test_a_client_clears_managed_fields_with_an_empty_list_or_one_empty_entry(
    reset: list[Obj],
) -> None:
    live = created()
    cleared = written(
        live, lambda o: o["metadata"].update(managedFields=reset), manager="kubectl", at=EDITED
    )
    assert "managedFields" not in cleared["metadata"]


@pytest.mark.parametrize(
    "garbage", [None, [{"manager": "x", "operation": "Bogus", "apiVersion": "v1"}], "nonsense"]
)
def test_missing_or_undecodable_managed_fields_keep_the_stored_ones(garbage: object) -> None:
    live = created()

    def send(obj: Obj) -> None:
        obj["metadata"]["managedFields"] = garbage
        set_node_name(obj)

    edited = written(live, send, manager="kubectl-edit", at=EDITED)
    assert managers(edited) == ["argocd-controller", "kubectl-edit"]


def test_managed_fields_sent_with_an_update_are_honoured() -> None:
    live = created()
    rewritten = copy.deepcopy(live["metadata"]["managedFields"])
    rewritten[0]["manager"] = "flux"

    def send(obj: Obj) -> None:
        obj["metadata"]["managedFields"] = rewritten
        set_node_name(obj)

    edited = written(live, send, manager="kubectl-edit", at=EDITED)
    assert managers(edited) == ["flux", "kubectl-edit"]


def test_managed_fields_sent_to_a_subresource_are_ignored() -> None:
    live = created()

    def send(obj: Obj) -> None:
        obj["metadata"]["managedFields"] = []
        obj["status"] = {"replicas": 1}

    reported = written(live, send, manager="kcm", at=SYNCED, subresource="status")
    assert managers(reported) == ["argocd-controller", "kcm"]


def test_an_existing_object_without_managed_fields_stays_untracked_until_applied() -> None:
    live = created()
    del live["metadata"]["managedFields"]
    edited = written(live, set_node_name, manager="kubectl-edit", at=EDITED)
    assert "managedFields" not in edited["metadata"]


def test_an_object_that_does_not_fit_its_schema_is_stored_without_managed_fields() -> None:
    body = web()
    del body["spec"]["template"]["spec"]["containers"][0]["name"]
    track_update(
        old=None, new=body, manager="x", time=CREATED, api_version="apps/v1", schema=DEPLOYMENT
    )
    assert "managedFields" not in body["metadata"]


def test_schemaless_objects_own_every_key_and_treat_lists_as_atomic() -> None:
    machine = {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": "m-1", "namespace": "capi"},
        "spec": {"clusterName": "prod", "bootstrap": {"dataSecretName": "b"}, "taints": [1, 2]},
    }
    track_update(
        old=None,
        new=machine,
        manager="capi-controller",
        time=CREATED,
        api_version="cluster.x-k8s.io/v1beta1",
        schema=None,
    )
    assert owned(machine, "capi-controller") == paths(
        "spec",
        "spec.clusterName",
        "spec.bootstrap",
        "spec.bootstrap.dataSecretName",
        "spec.taints",
    )


# --- manager names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_manager", "user_agent", "expected"),
    [
        ("kubectl-edit", "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07", "kubectl-edit"),
        (None, "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07", "kubectl"),
        ("", "argocd-application-controller/v2.11 (linux)", "argocd-application-controller"),
        (None, "kube\x00let/v1.32", "kubelet"),
        (None, "é" * 100 + "/x", "é" * 64),
        (None, None, "unknown"),
        (None, "/v1", "unknown"),
    ],
)
def test_manager_name_is_the_field_manager_or_the_user_agent_prefix(
    field_manager: str | None, user_agent: str | None, expected: str
) -> None:
    assert manager_name(field_manager, user_agent) == expected


def test_apply_requires_a_field_manager() -> None:
    with pytest.raises(StatusError) as caught:
        validate_field_manager(None, options="PatchOptions", apply=True)
    assert caught.value.code == 422
    assert caught.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )


def test_field_manager_longer_than_128_bytes_or_unprintable_is_invalid() -> None:
    with pytest.raises(StatusError) as caught:
        validate_field_manager("m" * 129, options="UpdateOptions")
    assert caught.value.causes[0].message == "Too long: must have at most 128 bytes"
    with pytest.raises(StatusError) as caught:
        validate_field_manager("ab\x01", options="CreateOptions")
    assert caught.value.causes[0].message == (
        'Invalid value: "ab\\x01": invalid character U+0001 (at position 2)'
    )
    validate_field_manager("m" * 128, options="UpdateOptions")
