"""Incident 1: the live edit GitOps never saw (a staging GKE cluster, December 2024).

Six e2-standard-2 nodes (about 8 GiB each) run an API gateway managed by Argo CD (automated sync,
no self-heal). Timeline (UTC; snapshot at 05:16:52):

* 05:02:41 ``kubectl edit``: ``replicas: 12 -> 1`` (Argo CD reports OutOfSync);
* 05:04:18 ``kubectl edit`` adds ``spec.template.spec.nodeName`` (the node that could not reach
  the outside): a new ReplicaSet, one pod, bound without the scheduler;
* 05:11:52 a colleague's commit triggers an automated sync: Argo CD restores ``replicas: 12`` (a
  field in Git) and never sees ``nodeName`` (in neither Git nor last-applied), app Synced;
* from 05:11:53 the kubelet rejects every extra pod (``OutOfmemory``: 12 x 800Mi do not fit
  beside the node's redis and other pods) and the ReplicaSet replaces each one at once.

The Deployments and ReplicaSets were dumped with ``--show-managed-fields``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _apps, _gke, bodies, lifelike

Obj = dict[str, Any]

CLUSTER = _gke.Cluster(
    name="apigw-stg",
    project="apigw-stg-31f2",
    region="asia-northeast1",
    version="v1.30.5-gke.1014001",
    runtime="containerd://1.7.22",
    kernel="6.1.100+",
    modern=True,
    pod_range="10.52",
    node_range="10.146.0",
)
CREATED = datetime(2024, 6, 12, 8, 30, 4, tzinfo=UTC)
RELEASED = datetime(2024, 11, 28, 9, 14, 37, tzinfo=UTC)
EDIT_REPLICAS = datetime(2024, 12, 10, 5, 2, 41, tzinfo=UTC)
EDIT_NODE = datetime(2024, 12, 10, 5, 4, 18, tzinfo=UTC)
SYNC = datetime(2024, 12, 10, 5, 11, 52, tzinfo=UTC)
REJECTED = 200
"""Failed pods in the snapshot: one every 1.5 s for five minutes after the sync."""
IMAGE = "asia-northeast1-docker.pkg.dev/apigw-stg-31f2/gateway/api-gateway:v3.14.2"
COMMIT = "4b1e9f0c27d35a8e6f1b0c9d2e7a4f5b8c3d6e01"


def _f(*names: str, dot: bool = True) -> Obj:
    fields: Obj = {".": {}} if dot else {}
    fields.update({f"f:{name}": {} for name in names})
    return fields


def _probe() -> Obj:
    return {
        ".": {},
        "f:failureThreshold": {},
        "f:httpGet": _f("path", "port", "scheme"),
        "f:periodSeconds": {},
        "f:successThreshold": {},
        "f:timeoutSeconds": {},
    }


def _argocd_fields() -> Obj:
    container = {
        ".": {},
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:livenessProbe": _probe(),
        "f:name": {},
        "f:ports": {
            ".": {},
            'k:{"containerPort":8080,"protocol":"TCP"}': _f("containerPort", "name", "protocol"),
        },
        "f:readinessProbe": _probe(),
        "f:resources": {".": {}, "f:limits": _f("memory"), "f:requests": _f("cpu", "memory")},
        "f:terminationMessagePath": {},
        "f:terminationMessagePolicy": {},
    }
    return {
        "f:metadata": {
            "f:annotations": _f(
                "argocd.argoproj.io/tracking-id", "kubectl.kubernetes.io/last-applied-configuration"
            ),
            "f:labels": _f(
                "app.kubernetes.io/instance", "app.kubernetes.io/name", "app.kubernetes.io/part-of"
            ),
        },
        "f:spec": {
            "f:progressDeadlineSeconds": {},
            "f:replicas": {},
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:strategy": {"f:rollingUpdate": _f("maxSurge", "maxUnavailable"), "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": _f("app.kubernetes.io/name")},
                "f:spec": {
                    "f:containers": {'k:{"name":"api-gateway"}': container},
                    **_f(
                        "dnsPolicy",
                        "restartPolicy",
                        "schedulerName",
                        "securityContext",
                        "terminationGracePeriodSeconds",
                        dot=False,
                    ),
                },
            },
        },
    }


def _status_fields() -> Obj:
    condition = _f("lastTransitionTime", "lastUpdateTime", "message", "reason", "status", "type")
    return {
        "f:status": {
            "f:availableReplicas": {},
            "f:conditions": {
                ".": {},
                'k:{"type":"Available"}': condition,
                'k:{"type":"Progressing"}': condition,
            },
            **_f(
                "observedGeneration",
                "readyReplicas",
                "replicas",
                "unavailableReplicas",
                "updatedReplicas",
                dot=False,
            ),
        }
    }


def _gateway(node_name: str) -> tuple[Obj, Obj, Obj]:
    """The Deployment as the edits left it, its current and its previous ReplicaSet."""
    container = _apps.container(
        "api-gateway",
        IMAGE,
        requests={"cpu": "200m", "memory": "800Mi"},
        limits={"memory": "800Mi"},
        ports=[("http", 8080)],
        liveness=_apps.http_probe("/healthz/live", "http", period=10, failures=3),
        readiness=_apps.http_probe("/healthz/ready", "http", period=5, failures=3),
    )
    tracking = "api-gateway:apps/Deployment:gateway/api-gateway"
    labels = {"app.kubernetes.io/instance": "api-gateway", "app.kubernetes.io/part-of": "gateway"}
    git = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "annotations": {"argocd.argoproj.io/tracking-id": tracking},
            "labels": {"app.kubernetes.io/name": "api-gateway", **labels},
            "name": "api-gateway",
            "namespace": "gateway",
        },
        "spec": {
            "replicas": 12,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "api-gateway"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "api-gateway"}},
                "spec": {
                    "containers": [
                        {
                            "image": IMAGE,
                            "name": "api-gateway",
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "resources": container["resources"],
                        }
                    ]
                },
            },
        },
    }
    managed = [
        bodies.managed_entry(manager="argocd-controller", fields=_argocd_fields(), time=SYNC),
        bodies.managed_entry(
            manager="kube-controller-manager",
            time=EDIT_NODE,
            fields={"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}},
        ),
        bodies.managed_entry(
            manager="kubectl-edit",
            time=EDIT_NODE,
            fields={"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}},
        ),
        bodies.managed_entry(
            manager="kube-controller-manager",
            subresource="status",
            time=SYNC + timedelta(seconds=299),
            fields=_status_fields(),
        ),
    ]
    annotations = {
        "argocd.argoproj.io/tracking-id": tracking,
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
            git, sort_keys=True, separators=(",", ":")
        )
        + "\n",
    }
    deployment, rs = _apps.deploy(
        "api-gateway",
        namespace="gateway",
        containers=[container],
        selector={"app.kubernetes.io/name": "api-gateway"},
        labels=labels,
        annotations=annotations,
        created=CREATED,
        rolled=EDIT_NODE,
        replicas=12,
        ready=1,
        revision=7,
        managed=managed,
        pod_spec={"nodeName": node_name},
    )
    # Generation counts spec changes: releases up to 6, the two edits, and the sync.
    deployment["metadata"]["generation"] = 9
    _apps.set_status(deployment, rs, replicas=12, ready=1, revision=7, rolled=EDIT_NODE, active=12)
    deployment["status"]["observedGeneration"] = 9
    available, progressing = deployment["status"]["conditions"]
    available["lastTransitionTime"] = available["lastUpdateTime"] = bodies.stamp(SYNC)
    progressing["lastUpdateTime"] = bodies.stamp(SYNC + timedelta(seconds=299))
    old_body, old_rs = _apps.deploy(
        "api-gateway",
        namespace="gateway",
        containers=[container],
        selector={"app.kubernetes.io/name": "api-gateway"},
        labels=labels,
        created=CREATED,
        rolled=RELEASED,
        replicas=12,
        revision=6,
    )
    _apps.set_status(old_body, old_rs, replicas=0, ready=0, revision=6, rolled=RELEASED)
    old_rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] = "1"
    old_rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] = "2"
    old_rs["spec"]["replicas"] = 0
    old_rs["metadata"]["generation"] = 3
    old_rs["status"]["observedGeneration"] = 3
    old_rs["metadata"]["ownerReferences"] = [lifelike.owner_reference(deployment)]
    for replicaset, when in ((rs, SYNC), (old_rs, EDIT_NODE + timedelta(seconds=3))):
        replicaset["metadata"]["managedFields"] = [
            bodies.managed_entry(
                manager="kube-controller-manager",
                time=when,
                fields={
                    "f:metadata": {
                        "f:annotations": _f(
                            "deployment.kubernetes.io/desired-replicas",
                            "deployment.kubernetes.io/max-replicas",
                            "deployment.kubernetes.io/revision",
                        ),
                        "f:labels": _f("app.kubernetes.io/name", "pod-template-hash"),
                        "f:ownerReferences": {
                            ".": {},
                            'k:{"uid":"' + deployment["metadata"]["uid"] + '"}': {},
                        },
                    },
                    "f:spec": _f("replicas", "selector", "template", dot=False),
                },
            ),
            bodies.managed_entry(
                manager="kube-controller-manager",
                subresource="status",
                time=when,
                fields={
                    "f:status": _f(
                        "fullyLabeledReplicas", "observedGeneration", "replicas", dot=False
                    )
                },
            ),
        ]
    return deployment, rs, old_rs


def _application() -> Obj:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": "api-gateway",
            "namespace": "argocd",
            "uid": bodies.uid_for("Application", "argocd", "api-gateway"),
        },
    }


def storm_events(
    deployment: Obj, rs: Obj, old_rs: Obj, pods: list[Obj], node_name: str
) -> list[Obj]:
    """What the controllers, the kubelet and Argo CD recorded, as the event correlator kept it:
    the eleventh similar ``SuccessfulCreate`` in ten minutes is folded into one
    ``(combined from similar events)`` event whose count keeps growing."""
    app = _application()
    old_name, new_name = old_rs["metadata"]["name"], rs["metadata"]["name"]
    argo = "argocd-application-controller"
    events = [
        lifelike.emit(
            deployment,
            "ScalingReplicaSet",
            f"Scaled down replica set {old_name} to 1 from 12",
            first=EDIT_REPLICAS,
            component="deployment-controller",
        ),
        lifelike.emit(
            app,
            "ResourceUpdated",
            "Updated sync status: Synced -> OutOfSync",
            first=EDIT_REPLICAS + timedelta(seconds=4),
            component=argo,
        ),
        lifelike.emit(
            deployment,
            "ScalingReplicaSet",
            f"Scaled up replica set {new_name} to 1",
            first=EDIT_NODE,
            component="deployment-controller",
        ),
        lifelike.emit(
            deployment,
            "ScalingReplicaSet",
            f"Scaled down replica set {old_name} to 0 from 1",
            first=EDIT_NODE + timedelta(seconds=3),
            component="deployment-controller",
        ),
        lifelike.emit(
            app,
            "OperationStarted",
            f"Initiated automated sync to '{COMMIT}'",
            first=SYNC - timedelta(seconds=1),
            component=argo,
        ),
        lifelike.emit(
            deployment,
            "ScalingReplicaSet",
            f"Scaled up replica set {new_name} to 12 from 1",
            first=SYNC,
            component="deployment-controller",
        ),
        lifelike.emit(
            app,
            "OperationCompleted",
            f"Sync operation to {COMMIT} succeeded",
            first=SYNC + timedelta(seconds=1),
            component=argo,
        ),
        lifelike.emit(
            app,
            "ResourceUpdated",
            "Updated sync status: OutOfSync -> Synced",
            first=SYNC + timedelta(seconds=1),
            component=argo,
        ),
        lifelike.emit(
            app,
            "ResourceUpdated",
            "Updated health status: Healthy -> Progressing",
            first=SYNC + timedelta(seconds=2),
            component=argo,
        ),
    ]
    for i in range(11):
        victim = f"{old_name}-{lifelike.kube_name('old', str(i))}"
        message = f"Deleted pod: {victim}"
        events.append(
            lifelike.emit(
                old_rs,
                "SuccessfulDelete",
                message if i < 10 else "(combined from similar events): " + message,
                first=EDIT_REPLICAS,
                count=1 if i < 10 else 2,
                last=EDIT_REPLICAS if i < 10 else EDIT_NODE + timedelta(seconds=3),
                component="replicaset-controller",
            )
        )
    created = sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"])
    for i, pod in enumerate(created[:10]):
        events.append(
            lifelike.emit(
                rs,
                "SuccessfulCreate",
                f"Created pod: {pod['metadata']['name']}",
                first=lifelike.parse_stamp(pod["metadata"]["creationTimestamp"]),
                component="replicaset-controller",
                seq=str(i),
            )
        )
    latest = created[-1]
    events.append(
        lifelike.emit(
            rs,
            "SuccessfulCreate",
            f"(combined from similar events): Created pod: {latest['metadata']['name']}",
            first=lifelike.parse_stamp(created[10]["metadata"]["creationTimestamp"]),
            last=lifelike.parse_stamp(latest["metadata"]["creationTimestamp"]),
            count=len(created) - 10,
            component="replicaset-controller",
        )
    )
    for pod in created:
        status = pod["status"]
        when = lifelike.parse_stamp(pod["metadata"]["creationTimestamp"])
        if status["phase"] == "Failed":
            events.append(
                lifelike.emit(
                    pod,
                    "OutOfmemory",
                    status["message"].removeprefix("Pod was rejected: "),
                    type="Warning",
                    first=when,
                    host=node_name,
                )
            )
        else:
            field = "spec.containers{api-gateway}"
            for reason, message in (
                ("Pulled", f'Container image "{IMAGE}" already present on machine'),
                ("Created", "Created container api-gateway"),
                ("Started", "Started container api-gateway"),
            ):
                events.append(
                    lifelike.emit(
                        pod,
                        reason,
                        message,
                        first=when + timedelta(seconds=2),
                        host=node_name,
                        field_path=field,
                    )
                )
    return events
