"""Pods as the API server, the controllers and the kubelet leave them (see ``lifelike``)."""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime, timedelta
from typing import Any

from kubemedic.testing import bodies
from kubemedic.testing._naming import digest, kube_name

Obj = dict[str, Any]

DEFAULT_TOLERATIONS: list[Obj] = [
    {
        "effect": "NoExecute",
        "key": f"node.kubernetes.io/{key}",
        "operator": "Exists",
        "tolerationSeconds": 300,
    }
    for key in ("not-ready", "unreachable")
]
"""What the DefaultTolerationSeconds admission plugin adds to every pod that has none."""

DAEMON_TOLERATIONS: list[Obj] = [
    {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists"},
    *(
        {"effect": "NoSchedule", "key": f"node.kubernetes.io/{key}", "operator": "Exists"}
        for key in ("disk-pressure", "memory-pressure", "pid-pressure", "unschedulable")
    ),
]
"""What the DaemonSet controller adds to its pods (plus ``network-unavailable`` for
``hostNetwork`` pods), so daemons keep running on nodes in trouble."""


def qos_class(pod: Obj) -> str:
    """``Guaranteed`` / ``Burstable`` / ``BestEffort`` as the API server computes it."""
    containers = pod["spec"]["containers"] + pod["spec"].get("initContainers", [])
    resources = [c.get("resources", {}) for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for r in resources:
        limits = r.get("limits", {})
        requests = {**limits, **r.get("requests", {})}
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name) != limits[name]:
                return "Burstable"
    return "Guaranteed"


def terminated(
    *, reason: str, exit_code: int, started: datetime, finished: datetime, container_id: str
) -> Obj:
    """A container ``terminated`` state (for ``state`` or ``lastState``)."""
    return {
        "terminated": {
            "containerID": container_id,
            "exitCode": exit_code,
            "finishedAt": bodies.stamp(finished),
            "reason": reason,
            "startedAt": bodies.stamp(started),
        }
    }


def _container_id(*parts: str) -> str:
    return "containerd://" + hashlib.sha256("/".join(("ctr", *parts)).encode()).hexdigest()


def _image_id(image: str) -> str:
    repository = image.rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def mark_deleted(pod: Obj, when: datetime) -> Obj:
    """Deletion requested at ``when``: the API server sets ``deletionTimestamp`` to the end of
    the grace period, and the pod stays (Terminating) until its kubelet confirms."""
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    pod["metadata"]["deletionTimestamp"] = bodies.stamp(when + timedelta(seconds=grace))
    pod["metadata"]["deletionGracePeriodSeconds"] = grace
    return pod


def finish_pod(
    body: Obj,
    *,
    started: datetime | None,
    pod_ip: str | None = None,
    host_ip: str | None = None,
    ready: bool = True,
    restarts: dict[str, int] | None = None,
    last_states: dict[str, Obj] | None = None,
    states: dict[str, Obj] | None = None,
    tolerations: list[Obj] | None = None,
    service_account: str = "default",
    pod_spec: Obj | None = None,
    deleted: datetime | None = None,
    modern: bool = True,
) -> Obj:
    """Complete a ``bodies.pod`` body as the API server and the kubelet would.

    Adds the admission defaults (tolerations, service account, projected token volume), and for a
    pod the kubelet has started (``started`` given, phase Running) its IPs, QoS class, conditions
    and container statuses. ``modern`` adds ``PodReadyToStartContainers`` (Kubernetes 1.29+).
    ``deleted`` marks a pod stuck terminating (deletion requested, kubelet never confirmed).
    """
    meta, spec = body["metadata"], body["spec"]
    namespace, name = meta.get("namespace", "default"), meta["name"]
    spec.update(pod_spec or {})
    spec.setdefault("tolerations", copy.deepcopy(tolerations or DEFAULT_TOLERATIONS))
    spec["serviceAccountName"] = service_account
    spec["serviceAccount"] = service_account
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    volume = f"kube-api-access-{kube_name('vol', namespace, name)}"
    spec.setdefault("volumes", []).append(
        {
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            "name": "kube-root-ca.crt",
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                    "path": "namespace",
                                }
                            ]
                        }
                    },
                ],
            },
        }
    )
    for c in spec["containers"]:
        c.setdefault("volumeMounts", []).append(
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": volume,
                "readOnly": True,
            }
        )
    status = body["status"]
    status["qosClass"] = qos_class(body)
    if deleted is not None:
        mark_deleted(body, deleted)
    if started is None or body["status"]["phase"] != "Running":
        return body
    if host_ip:
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    created = bodies.stamp(started - timedelta(seconds=2))
    ready_at = bodies.stamp(started + timedelta(seconds=4))
    flag = "True" if ready else "False"
    conditions = [
        ("PodReadyToStartContainers", "True", bodies.stamp(started)),
        ("Initialized", "True", created),
        ("Ready", flag, ready_at),
        ("ContainersReady", flag, ready_at),
        ("PodScheduled", "True", created),
    ]
    status["conditions"] = [
        {"lastProbeTime": None, "lastTransitionTime": when, "status": value, "type": kind}
        for kind, value, when in conditions
        if modern or kind != "PodReadyToStartContainers"
    ]
    status["startTime"] = created
    statuses = []
    for c in spec["containers"]:
        count = (restarts or {}).get(c["name"], 0)
        state = (states or {}).get(c["name"]) or {"running": {"startedAt": bodies.stamp(started)}}
        statuses.append(
            {
                "containerID": _container_id(namespace, name, c["name"], str(count)),
                "image": c["image"],
                "imageID": _image_id(c["image"]),
                "lastState": (last_states or {}).get(c["name"], {}),
                "name": c["name"],
                "ready": ready and "running" in state,
                "restartCount": count,
                "started": "running" in state,
                "state": state,
            }
        )
    status["containerStatuses"] = statuses
    return body


SYSTEM_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def node_address(node: Obj, kind: str = "InternalIP") -> str | None:
    for address in node["status"].get("addresses", []):
        if address["type"] == kind:
            return str(address["address"])
    return None


def pod_ip_on(node: Obj, *parts: str) -> str:
    """An address from the node's ``podCIDR`` (a /24), as the CNI plugin would hand out."""
    cidr = node["spec"].get("podCIDR", "10.244.0.0/24")
    base = cidr.split("/")[0].rsplit(".", 1)[0]
    return f"{base}.{2 + digest('pod-ip', *parts)[0] % 250}"


def controlled_pod(
    owner: Obj | None,
    name: str,
    *,
    node: Obj | None,
    created: datetime,
    namespace: str | None = None,
    started: datetime | None = None,
    phase: str = "Running",
    reason: str | None = None,
    message: str | None = None,
    ready: bool = True,
    restarts: dict[str, int] | None = None,
    last_states: dict[str, Obj] | None = None,
    states: dict[str, Obj] | None = None,
    priority: int | None = None,
    deleted: datetime | None = None,
    modern: bool = True,
    labels: dict[str, str] | None = None,
    extra_spec: Obj | None = None,
) -> Obj:
    """A pod of ``owner`` (ReplicaSet, StatefulSet, DaemonSet) with the owner's template.

    The template's pod-spec fields (node selector, affinity, tolerations, priority class, host
    network, service account) are copied as the controllers copy them; ``started`` defaults to a
    few seconds after ``created``. ``owner=None`` makes a bare pod (use ``extra_spec``).
    """
    template = owner["spec"]["template"] if owner else {"metadata": {}, "spec": {}}
    template_spec = copy.deepcopy(template["spec"])
    containers = template_spec.pop("containers", None) or (extra_spec or {}).get("containers")
    body = bodies.pod(
        name,
        namespace=namespace or (owner["metadata"]["namespace"] if owner else "default"),
        node_name=node["metadata"]["name"] if node else None,
        containers=copy.deepcopy(containers),
        owner=owner,
        labels=labels,
        phase=phase,
        reason=reason,
        message=message,
        created=created,
    )
    spec = body["spec"]
    spec.update(template_spec)
    spec.update({k: v for k, v in (extra_spec or {}).items() if k != "containers"})
    class_name = spec.get("priorityClassName")
    spec["priority"] = priority if priority is not None else SYSTEM_PRIORITIES.get(class_name, 0)
    host_ip = node_address(node) if node else None
    pod_ip = host_ip if spec.get("hostNetwork") else None
    if node is not None and pod_ip is None:
        pod_ip = pod_ip_on(node, body["metadata"]["namespace"], name)
    tolerations = spec.pop("tolerations", None)
    if owner is not None and owner["kind"] == "DaemonSet":
        extra = (
            [
                {
                    "effect": "NoSchedule",
                    "key": "node.kubernetes.io/network-unavailable",
                    "operator": "Exists",
                }
            ]
            if spec.get("hostNetwork")
            else []
        )
        tolerations = [*(tolerations or []), *DAEMON_TOLERATIONS, *extra]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": [node["metadata"]["name"] if node else ""],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    elif tolerations is not None:
        tolerations = [*tolerations, *DEFAULT_TOLERATIONS]
    return finish_pod(
        body,
        started=(started or created + timedelta(seconds=3)) if phase == "Running" else None,
        pod_ip=pod_ip,
        host_ip=host_ip,
        ready=ready,
        restarts=restarts,
        last_states=last_states,
        states=states,
        tolerations=tolerations,
        service_account=template_spec.get("serviceAccountName", "default"),
        deleted=deleted,
        modern=modern,
    )
