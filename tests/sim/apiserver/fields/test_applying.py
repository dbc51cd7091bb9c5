"""Server-side apply: merging, ownership, conflicts, force, pruning and list items, held to the
API server's messages and to a real server's recorded server-side apply result."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import decode_fieldsv1
from kubemedic.sim.apiserver.fields.applying import LAST_APPLIED, apply
from kubemedic.sim.apiserver.fields.fieldmanaging import track_update
from kubemedic.sim.machinery.definitions import definitions
from kubemedic.sim.machinery.errors import StatusError
from tests import paths
from tests.factories import deployment
from tests.sim.manifests import manifest

Obj = dict[str, Any]

GITOPS = paths.PEER / "gitops-engine-diff"
needs_gitops = pytest.mark.skipif(not GITOPS.is_dir(), reason=f"fixtures not found at {GITOPS}")

DEPLOYMENT = definitions().for_kind("apps", "v1", "Deployment")
T1, T2, T3, T4 = (f"2024-05-0{day}T10:00:00Z" for day in range(1, 5))
UID = "0b6e4c1a-9a53-4a4e-8d0a-5f0c6f1c2d3e"


def config(*containers: Obj, labels: dict[str, str] | None = None, **pod_spec: Any) -> Obj:
    """An applied configuration of Deployment ``web``: only what its author sets."""
    body = manifest(
        deployment("web", namespace="shop", containers=list(containers) or [app()], labels=labels)
    )
    spec = body["spec"]["template"]["spec"]
    for defaulted in ("restartPolicy", "schedulerName"):
        del spec[defaulted]
    spec.update(pod_spec)
    del body["spec"]["replicas"]
    return body


def app(name: str = "web", image: str = "nginx:1.25", **fields: Any) -> Obj:
    return {"name": name, "image": image, **fields}


def applied(live: Obj | None, conf: Obj, *, manager: str, at: str = T2, force: bool = False) -> Obj:
    obj = apply(
        live=live,
        applied=conf,
        manager=manager,
        force=force,
        time=at,
        api_version="apps/v1",
        schema=DEPLOYMENT,
    )
    obj["metadata"].setdefault("uid", UID)
    return obj


def updated(live: Obj, new: Obj, *, manager: str, at: str) -> Obj:
    track_update(
        old=live, new=new, manager=manager, time=at, api_version="apps/v1", schema=DEPLOYMENT
    )
    return new


def entry(obj: Obj, manager: str, operation: str = "Apply") -> Obj:
    (found,) = [
        e
        for e in obj["metadata"]["managedFields"]
        if e["manager"] == manager and e["operation"] == operation
    ]
    return found


def owned(obj: Obj, manager: str, operation: str = "Apply") -> set[str]:
    return {str(p) for p in decode_fieldsv1(entry(obj, manager, operation)["fieldsV1"])}


def managers(obj: Obj) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def pod_spec(obj: Obj) -> Obj:
    spec: Obj = obj["spec"]["template"]["spec"]
    return spec


def edited_node_name(live: Obj) -> Obj:
    new = copy.deepcopy(live)
    pod_spec(new)["nodeName"] = "node-3"
    return updated(live, new, manager="kubectl-edit", at=T2)


# --- ownership of an applied configuration ---------------------------------------------------


def test_the_applier_owns_exactly_its_configuration() -> None:
    live = applied(None, config(), manager="argocd-controller", at=T1)
    argo = entry(live, "argocd-controller")
    assert (argo["apiVersion"], argo["time"]) == ("apps/v1", T1)
    assert argo["fieldsV1"]["f:spec"] == {
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}},
            "f:spec": {
                "f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
            },
        },
    }
    assert managers(live) == [("argocd-controller", "Apply")]
    assert live["spec"]["template"]["metadata"]["creationTimestamp"] is None  # Go zero value


def test_a_conflict_names_the_owner_and_the_field_like_the_api_server() -> None:
    live = edited_node_name(applied(None, config(), manager="argocd-controller", at=T1))
    with pytest.raises(StatusError) as caught:
        applied(live, config(nodeName="node-1"), manager="argocd-controller", at=T3)
    error = caught.value
    assert (error.code, error.reason) == (409, "Conflict")
    assert error.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: '
        ".spec.template.spec.nodeName"
    )
    assert [c.to_json() for c in error.causes] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl-edit" using apps/v1',
            "field": ".spec.template.spec.nodeName",
        }
    ]
    status = error.to_status()
    assert "name" not in status.get("details", {})


def test_force_moves_the_conflicting_field_to_the_applier() -> None:
    live = edited_node_name(applied(None, config(), manager="argocd-controller", at=T1))
    forced = applied(live, config(nodeName="node-1"), manager="argocd-controller", force=True)
    assert pod_spec(forced)["nodeName"] == "node-1"
    assert "spec.template.spec.nodeName" in owned(forced, "argocd-controller")
    assert ("kubectl-edit", "Update") not in managers(forced)  # its only field is gone
    assert entry(forced, "argocd-controller")["time"] == T2


def test_applying_an_equal_value_shares_the_field_without_conflict() -> None:
    live = edited_node_name(applied(None, config(), manager="argocd-controller", at=T1))
    shared = applied(live, config(nodeName="node-3"), manager="argocd-controller", at=T3)
    assert "spec.template.spec.nodeName" in owned(shared, "argocd-controller")
    assert owned(shared, "kubectl-edit", "Update") == {"spec.template.spec.nodeName"}


def test_every_conflict_is_listed_per_manager() -> None:
    live = applied(None, config(labels={"team": "a"}), manager="argocd-controller", at=T1)
    new = copy.deepcopy(live)
    pod_spec(new)["containers"][0]["image"] = "nginx:9"
    new["metadata"]["labels"]["team"] = "b"
    live = updated(live, new, manager="kubectl", at=T2)
    with pytest.raises(StatusError) as caught:
        applied(live, config(labels={"team": "a"}), manager="argocd-controller", at=T3)
    assert caught.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kubectl" using apps/v1:\n'
        "- .metadata.labels.team\n"
        '- .spec.template.spec.containers[name="web"].image'
    )
    assert [c.field for c in caught.value.causes] == [
        ".metadata.labels.team",
        '.spec.template.spec.containers[name="web"].image',
    ]


# --- pruning ------------------------------------------------------------------------------


def test_fields_dropped_from_the_configuration_are_removed() -> None:
    live = applied(None, config(labels={"team": "a", "tier": "web"}), manager="argo", at=T1)
    pruned = applied(live, config(labels={"team": "a"}), manager="argo", at=T2)
    assert pruned["metadata"]["labels"] == {"app.kubernetes.io/name": "web", "team": "a"}
    assert "metadata.labels.tier" not in owned(pruned, "argo")


def test_a_dropped_field_another_manager_also_owns_stays() -> None:
    live = applied(None, config(labels={"tier": "web"}), manager="argo", at=T1)
    live = applied(live, config(labels={"tier": "web"}), manager="platform", at=T2)
    pruned = applied(live, config(), manager="argo", at=T3)
    assert pruned["metadata"]["labels"]["tier"] == "web"
    assert owned(pruned, "platform") >= {"metadata.labels.tier"}


def test_a_dropped_field_an_updater_took_over_stays() -> None:
    live = applied(None, config(labels={"tier": "web"}), manager="argo", at=T1)
    new = copy.deepcopy(live)
    new["metadata"]["labels"]["tier"] = "edge"
    live = updated(live, new, manager="kubectl-label", at=T2)
    pruned = applied(live, config(), manager="argo", at=T3)
    assert pruned["metadata"]["labels"]["tier"] == "edge"


def test_fields_nobody_applied_survive_pruning() -> None:
    live = applied(None, config(labels={"tier": "web"}), manager="argo", at=T1)
    live["spec"]["revisionHistoryLimit"] = 10  # defaulted by the server: owned by no one
    pruned = applied(live, config(), manager="argo", at=T2)
    assert pruned["spec"]["revisionHistoryLimit"] == 10


# --- list items -------------------------------------------------------------------------------


def test_containers_are_owned_by_name_and_ports_by_port_and_protocol() -> None:
    web = app(ports=[{"containerPort": 8080}, {"containerPort": 53, "protocol": "UDP"}])
    live = applied(None, config(web), manager="argo", at=T1)
    live = applied(live, config(app("sidecar", "envoy:1.30")), manager="mesh-injector", at=T2)
    assert [c["name"] for c in pod_spec(live)["containers"]] == ["web", "sidecar"]
    assert owned(live, "argo") >= {
        "spec.template.spec.containers[name=web].ports[containerPort=8080,protocol=TCP]",
        "spec.template.spec.containers[name=web].ports[containerPort=53,protocol=UDP]",
    }
    assert not any("sidecar" in path for path in owned(live, "argo"))
    assert "spec.template.spec.containers[name=sidecar].image" in owned(live, "mesh-injector")

    without_web = applied(live, config(app("sidecar", "envoy:1.30")), manager="argo", at=T3)
    assert [c["name"] for c in pod_spec(without_web)["containers"]] == ["sidecar"]


def test_new_list_items_land_where_the_configuration_puts_them() -> None:
    live = applied(None, config(app("a"), app("c")), manager="argo", at=T1)
    live = applied(live, config(app("z")), manager="other", at=T2)
    merged = applied(live, config(app("a"), app("b"), app("c")), manager="argo", at=T3)
    assert [c["name"] for c in pod_spec(merged)["containers"]] == ["a", "b", "c", "z"]


def test_an_item_without_its_key_is_rejected_as_the_api_server_does() -> None:
    bad = config({"image": "nginx"})
    with pytest.raises(StatusError) as caught:
        applied(None, bad, manager="argo")
    assert caught.value.code == 500
    assert caught.value.message == (
        "failed to create typed patch object (shop/web; apps/v1, Kind=Deployment): "
        ".spec.template.spec.containers: element 0: associative list with keys has an "
        'element that omits key field "name" (and doesn\'t have default value)'
    )


def test_duplicate_keys_are_rejected_in_a_configuration() -> None:
    with pytest.raises(StatusError) as caught:
        applied(None, config(app("web"), app("web")), manager="argo")
    assert caught.value.message.endswith(
        '.spec.template.spec.containers: duplicate entries for key [name="web"]'
    )


# --- requests the API server refuses -----------------------------------------------------------


def test_a_configuration_of_another_kind_is_a_bad_request() -> None:
    live = applied(None, config(), manager="argo", at=T1)
    wrong = {**config(), "apiVersion": "apps/v1beta1"}
    with pytest.raises(StatusError) as caught:
        applied(live, wrong, manager="argo")
    assert (caught.value.code, caught.value.message) == (
        400,
        "invalid object type: apps/v1beta1, Kind=Deployment",
    )


def test_a_configuration_carrying_managed_fields_is_a_bad_request() -> None:
    conf = config()
    conf["metadata"]["managedFields"] = []
    with pytest.raises(StatusError) as caught:
        applied(None, conf, manager="argo")
    assert (caught.value.code, caught.value.message) == (400, "metadata.managedFields must be nil")


# --- apply on objects with a history ----------------------------------------------------------


def test_reapplying_the_same_configuration_changes_nothing() -> None:
    live = applied(None, config(), manager="argo", at=T1)
    again = applied(live, config(), manager="argo", at=T4)
    assert again == live
    assert entry(again, "argo")["time"] == T1


def test_fields_of_an_untracked_object_belong_to_before_first_apply() -> None:
    live = applied(None, config(labels={"tier": "web"}), manager="argo", at=T1)
    del live["metadata"]["managedFields"]
    with pytest.raises(StatusError) as caught:
        applied(live, config(labels={"tier": "edge"}), manager="argo", at=T2)
    assert '"before-first-apply" using apps/v1: .metadata.labels.tier' in caught.value.message


def test_kubectl_server_side_apply_takes_over_from_client_side_apply() -> None:
    """``kubectl apply --server-side`` after ``kubectl apply``: no conflicts over fields that still
    match the last-applied annotation, which is then kept up to date."""
    conf = config()
    live = copy.deepcopy(conf)
    live["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(conf) + "\n"}
    track_update(
        old=None,
        new=live,
        manager="kubectl-client-side-apply",
        time=T1,
        api_version="apps/v1",
        schema=DEPLOYMENT,
    )
    live["metadata"]["uid"] = UID
    bumped = config(app(image="nginx:1.26"))

    upgraded = applied(live, bumped, manager="kubectl", at=T2)
    assert pod_spec(upgraded)["containers"][0]["image"] == "nginx:1.26"
    assert "spec.template.spec.containers[name=web].image" in owned(upgraded, "kubectl")
    annotation = json.loads(upgraded["metadata"]["annotations"][LAST_APPLIED])
    assert annotation["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"

    with pytest.raises(StatusError):  # any other manager still conflicts
        applied(live, bumped, manager="argo", at=T2)


def test_status_apply_is_tracked_under_the_status_subresource() -> None:
    live = applied(None, config(), manager="argo", at=T1)
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    status["status"] = {"replicas": 1}
    result = apply(
        live=live,
        applied=status,
        manager="rollout-controller",
        force=False,
        subresource="status",
        time=T2,
        api_version="apps/v1",
        schema=DEPLOYMENT,
    )
    (entry_,) = [e for e in result["metadata"]["managedFields"] if e.get("subresource")]
    assert (entry_["manager"], entry_["subresource"]) == ("rollout-controller", "status")
    assert entry_["fieldsV1"] == {"f:status": {"f:replicas": {}}}


@needs_gitops
def test_managed_fields_match_a_real_servers_server_side_apply() -> None:
    """Argo CD's recorded server-side diff: a real API server applied this configuration (one
    port added) over a live object that also has a container added by ``kubectl apply``."""
    live = yaml.safe_load((GITOPS / "ssd-deploy-with-manual-apply-live.yaml").read_text())
    conf = yaml.safe_load((GITOPS / "ssd-deploy-with-manual-apply-config.yaml").read_text())
    predicted = json.loads(
        (GITOPS / "ssd-deploy-with-manual-apply-predicted-live.json").read_text()
    )

    result = applied(live, conf, manager="argocd-controller", force=True, at=T4)

    def sets(obj: Obj) -> list[tuple[str, str, str, set[FieldPath]]]:
        return [
            (e["manager"], e["operation"], e.get("subresource", ""), decode_fieldsv1(e["fieldsV1"]))
            for e in obj["metadata"]["managedFields"]
        ]

    assert sets(result) == sets(predicted)
    ports = pod_spec(result)["containers"][0]["ports"]
    assert [p["containerPort"] for p in ports] == [80, 40]
    assert [c["name"] for c in pod_spec(result)["containers"]] == ["main-container", "idle"]
