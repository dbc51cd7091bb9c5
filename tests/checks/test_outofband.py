"""``out-of-band-edit``: incident 1's ``kubectl edit`` that Argo CD never saw."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.outofband import OutOfBandEditConfig, out_of_band_edit
from kubemedic.checks.pinned import PinnedNodeNameConfig, pinned_node_name
from kubemedic.checks.storm import FailedPodStormConfig, failed_pod_storm
from kubemedic.model import objects
from kubemedic.model.view import ClusterView
from tests import paths
from tests.factories import container, deployment, managed_entry, node, pod, replicaset, stamp

NOW = objects.parse_time(stamp(timedelta(minutes=30)))
NODE = "gke-dev-pool-1-m02"
PEER = paths.PEER / "gitops-engine-diff"

ARGO_FIELDS = {
    "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/instance": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"api"}': {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}
                }
            }
        },
    },
}
EDITED_NODE_NAME = {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}
STATUS_FIELDS = {"f:status": {"f:replicas": {}, "f:observedGeneration": {}}}


def argocd(fields: dict[str, Any] | None = None, **entry: Any) -> dict[str, Any]:
    return managed_entry(manager="argocd-controller", fields=fields or ARGO_FIELDS, **entry)


def controller_status() -> dict[str, Any]:
    return managed_entry(
        manager="kube-controller-manager",
        fields=STATUS_FIELDS,
        subresource="status",
        time=timedelta(minutes=6),
    )


def gateway(managed: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    options.setdefault("labels", {"app.kubernetes.io/instance": "api-gateway"})
    return deployment(
        "api-gateway",
        namespace="gateway",
        replicas=12,
        containers=[container("api", requests={"cpu": "100m", "memory": "800Mi"})],
        managed=managed,
        **options,
    )


def run(*bodies: dict[str, Any], config: OutOfBandEditConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=NOW)
    return out_of_band_edit(view, config or OutOfBandEditConfig())


def test_incident_kubectl_edit_of_nodename_on_an_argocd_deployment_is_critical() -> None:
    edit = managed_entry(manager="kubectl-edit", fields=EDITED_NODE_NAME, time=timedelta(minutes=5))
    app = gateway([argocd(time=timedelta(minutes=7)), edit, controller_status()], node_name=NODE)

    [finding] = run(app)

    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Deployment"
    assert finding.cause == "pinned-node-name:gateway/Deployment/api-gateway"
    evidence = finding.evidence
    assert evidence["manager"] == "kubectl-edit"
    assert evidence["operation"] == "Update"
    assert evidence["time"] == stamp(timedelta(minutes=5))
    assert evidence["fieldPaths"] == ["spec.template.spec.nodeName"]
    assert evidence["schedulingPaths"] == ["spec.template.spec.nodeName"]
    assert evidence["gitops"] == {
        "tool": "argocd",
        "app": "api-gateway",
        "via": "manager argocd-controller",
    }
    assert "entries" not in evidence
    assert finding.first_seen == finding.last_seen == objects.parse_time(evidence["time"])
    assert "kubectl-edit set spec.template.spec.nodeName outside Git" in finding.message
    assert "Argo CD (app api-gateway)" in finding.message


def test_the_three_findings_of_incident_1_share_one_cause() -> None:
    edit = managed_entry(manager="kubectl-edit", fields=EDITED_NODE_NAME, time=timedelta(minutes=5))
    app = gateway([argocd(), edit], node_name=NODE)
    rs = replicaset(app)
    storm = [
        pod(
            f"api-gateway-5d8f7c9b4-{i:02d}",
            namespace="gateway",
            owner=rs,
            node_name=NODE,
            phase="Failed",
            reason="OutOfmemory",
            message="Pod was rejected: Node didn't have enough resource: memory, requested: 1",
            created=timedelta(minutes=20, seconds=10 * i),
        )
        for i in range(25)
    ]
    view = ClusterView.build([node(NODE, memory="8Gi"), app, rs, *storm], at=NOW)

    findings = [
        *pinned_node_name(view, PinnedNodeNameConfig()),
        *failed_pod_storm(view, FailedPodStormConfig()),
        *out_of_band_edit(view, OutOfBandEditConfig()),
    ]

    assert [f.check for f in findings] == [
        "pinned-node-name",
        "failed-pod-storm",
        "out-of-band-edit",
    ]
    assert {f.cause for f in findings} == {"pinned-node-name:gateway/Deployment/api-gateway"}
    assert all(f.severity is Severity.CRITICAL for f in findings)


def test_gitops_object_edited_only_by_argocd_is_silent() -> None:
    assert run(gateway([argocd(), controller_status()])) == []


def test_hand_edits_of_objects_no_gitops_tool_manages_are_silent() -> None:
    edit = managed_entry(manager="kubectl-edit", fields=EDITED_NODE_NAME)
    plain = gateway([edit], labels={})
    helm = gateway(
        [managed_entry(manager="helm", fields=ARGO_FIELDS), edit],
        labels={"app.kubernetes.io/instance": "gw", "app.kubernetes.io/managed-by": "Helm"},
    )
    helm["metadata"]["name"] = "helm-gateway"

    assert run(plain, helm) == []


def test_flux_kustomization_object_patched_replicas_is_a_warning_with_its_own_cause() -> None:
    patch = managed_entry(
        manager="kubectl-patch", fields={"f:spec": {"f:replicas": {}}}, time=timedelta(minutes=2)
    )
    labels = {
        "kustomize.toolkit.fluxcd.io/name": "apps",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
    }
    app = gateway([managed_entry(manager="kustomize-controller", fields={}), patch], labels=labels)

    [finding] = run(app)

    assert finding.severity is Severity.WARNING
    assert finding.cause == "out-of-band-edit:gateway/Deployment/api-gateway"
    assert finding.evidence["fieldPaths"] == ["spec.replicas"]
    assert finding.evidence["schedulingPaths"] == []
    assert finding.evidence["gitops"] == {
        "tool": "flux",
        "app": "flux-system/apps",
        "via": "label kustomize.toolkit.fluxcd.io/name",
    }
    assert "Flux rolls kubectl edits back at its next reconciliation" in finding.message


def test_resource_and_selector_edits_are_critical_but_a_bare_resources_map_is_not() -> None:
    container_path = 'k:{"name":"api"}'
    set_memory = managed_entry(
        manager="kubectl-set",
        fields={
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            container_path: {"f:resources": {"f:requests": {"f:memory": {}}}}
                        },
                        "f:nodeSelector": {".": {}, "f:disktype": {}},
                    }
                }
            }
        },
    )
    add_sidecar = managed_entry(
        manager="kubectl-edit",
        fields={
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"debug"}': {
                                ".": {},
                                "f:image": {},
                                "f:name": {},
                                "f:resources": {},
                            }
                        }
                    }
                }
            }
        },
    )
    tracked = {"app.kubernetes.io/instance": "gw"}
    resized = gateway([argocd(), set_memory], labels=tracked)
    sidecar = gateway([argocd(), add_sidecar], labels=tracked)
    sidecar["metadata"]["name"] = "with-sidecar"

    by_name = {f.object.name: f for f in run(resized, sidecar)}

    assert by_name["api-gateway"].severity is Severity.CRITICAL
    assert by_name["api-gateway"].evidence["schedulingPaths"] == [
        "spec.template.spec.containers[name=api].resources.requests.memory",
        "spec.template.spec.nodeSelector.disktype",
    ]
    assert by_name["api-gateway"].cause == "out-of-band-edit:gateway/Deployment/api-gateway"
    assert by_name["with-sidecar"].severity is Severity.WARNING
    assert by_name["with-sidecar"].evidence["fieldPaths"] == [
        "spec.template.spec.containers[name=debug].image",
        "spec.template.spec.containers[name=debug].name",
        "spec.template.spec.containers[name=debug].resources",
    ]


def test_rollout_restart_alone_is_info_and_last_applied_bookkeeping_is_ignored() -> None:
    restart = managed_entry(
        manager="kubectl-rollout",
        fields={
            "f:spec": {
                "f:template": {
                    "f:metadata": {
                        "f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}}
                    }
                }
            }
        },
        time=timedelta(minutes=3),
    )
    last_applied = managed_entry(
        manager="kubectl-client-side-apply",
        fields={
            "f:metadata": {
                "f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}
            }
        },
    )

    [finding] = run(gateway([argocd(), restart, last_applied]))

    assert finding.severity is Severity.INFO
    assert finding.evidence["manager"] == "kubectl-rollout"
    assert finding.evidence["fieldPaths"] == [
        'spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]'
    ]
    assert "entries" not in finding.evidence
    assert "deliberate imperative action" in finding.message


def test_several_hand_editors_are_listed_and_the_most_severe_leads() -> None:
    scale = managed_entry(
        manager="kubectl",
        fields={"f:spec": {"f:replicas": {}}},
        subresource="scale",
        time=timedelta(minutes=1),
    )
    edit = managed_entry(manager="kubectl-edit", fields=EDITED_NODE_NAME, time=timedelta(minutes=4))
    server_side = managed_entry(
        manager="kubectl", operation="Apply", fields={"f:metadata": {"f:labels": {"f:x": {}}}}
    )

    [finding] = run(gateway([argocd(), scale, edit, server_side]))

    assert finding.evidence["manager"] == "kubectl-edit"
    assert [e["manager"] for e in finding.evidence["entries"]] == ["kubectl", "kubectl-edit"]
    assert finding.evidence["entries"][0]["subresource"] == "scale"
    assert finding.first_seen == objects.parse_time(stamp(timedelta(minutes=1)))
    assert finding.last_seen == objects.parse_time(stamp(timedelta(minutes=4)))
    assert "kubectl also edited it by hand" in finding.message


def test_argocd_tracking_id_annotation_names_the_app() -> None:
    edit = managed_entry(manager="kubectl-edit", fields={"f:spec": {"f:replicas": {}}})
    app = gateway(
        [edit],
        labels={},
        annotations={"argocd.argoproj.io/tracking-id": "edge:apps/Deployment:gateway/api-gateway"},
    )

    [finding] = run(app)

    assert finding.evidence["gitops"] == {
        "tool": "argocd",
        "app": "edge",
        "via": "annotation argocd.argoproj.io/tracking-id",
    }


def test_unreadable_fieldsv1_is_reported_with_the_error() -> None:
    broken = managed_entry(manager="kubectl-edit", fields={"x:bad": {}})
    missing = managed_entry(manager="kubectl-patch", fields={})
    del missing["fieldsV1"]

    [finding] = run(gateway([argocd(), broken, missing]))

    assert finding.severity is Severity.WARNING
    errors = [e.get("error") for e in finding.evidence["entries"]]
    assert all(errors)
    assert "x:bad" in str(errors)
    assert "cannot be read" in finding.message


def test_odd_managed_fields_read_as_absent() -> None:
    app = gateway([])
    app["metadata"]["managedFields"] = ["not an entry", {"manager": 7}]

    assert run(app) == []


def test_imperative_managers_are_configurable() -> None:
    edit = managed_entry(manager="k9s", fields={"f:spec": {"f:replicas": {}}})
    config = OutOfBandEditConfig(imperative_managers=("k9s",))

    assert run(gateway([argocd(), edit])) == []
    [finding] = run(gateway([argocd(), edit]), config=config)
    assert finding.evidence["manager"] == "k9s"


@pytest.mark.skipif(not PEER.is_dir(), reason="recorded peer data not available")
def test_argo_cd_fixture_container_added_by_client_side_apply_is_reported() -> None:
    live = yaml.safe_load((PEER / "ssd-deploy-with-manual-apply-live.yaml").read_text())
    config = OutOfBandEditConfig(argocd_tracking_labels=("applications.argoproj.io/app-name",))

    [finding] = run(live, config=config)

    evidence = finding.evidence
    assert evidence["manager"] == "kubectl-client-side-apply"
    assert evidence["time"] == "2025-02-25T01:29:34Z"
    assert evidence["gitops"] == {
        "tool": "argocd",
        "app": "manual-apply-app",
        "via": "manager argocd-controller",
    }
    assert "spec.template.spec.containers[name=idle].image" in evidence["fieldPaths"]
    assert (
        "spec.template.spec.containers[name=idle].ports[containerPort=8080,protocol=TCP]"
        ".containerPort" in evidence["fieldPaths"]
    )
    assert not any("last-applied" in path for path in evidence["fieldPaths"])
    assert not any(path.startswith("status") for path in evidence["fieldPaths"])
    assert finding.severity is Severity.WARNING


def test_hand_pinned_daemonset_keeps_its_own_cause_since_daemonsets_cannot_storm() -> None:
    edit = managed_entry(manager="kubectl-edit", fields=EDITED_NODE_NAME)
    daemon = gateway([argocd(), edit], node_name=NODE)
    daemon["kind"] = "DaemonSet"

    [finding] = run(daemon)

    assert finding.severity is Severity.CRITICAL
    assert finding.cause == "out-of-band-edit:gateway/DaemonSet/api-gateway"
