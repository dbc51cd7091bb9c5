"""Lifelike bodies: the parts of real objects that ``bodies`` leaves out.

``bodies`` makes the smallest body a test needs. The bundled incident snapshots are read by
people who run clusters, so their objects must also carry what the API server, the controllers
and the kubelet add on their own: DaemonSets and StatefulSets, the tolerations admission and the
DaemonSet controller inject, the projected service-account volume, pod IPs and QoS class,
container IDs, restart counts and last states, deletion timestamps of pods stuck terminating,
and the names controllers generate (``<replicaset>-<5 chars>`` from the API server's
``bcdfghjklmnpqrstvwxz2456789`` alphabet, which has no vowels so that no word is ever spelled).

Everything is derived from hashes of its inputs: the same arguments give the same bytes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubemedic.testing import bodies
from kubemedic.testing._naming import digest, ip_in, kube_name, parse_stamp, pod_template_hash
from kubemedic.testing._pods import (
    DAEMON_TOLERATIONS,
    DEFAULT_TOLERATIONS,
    controlled_pod,
    finish_pod,
    mark_deleted,
    node_address,
    pod_ip_on,
    qos_class,
    terminated,
)

__all__ = [
    "DAEMON_TOLERATIONS",
    "DEFAULT_TOLERATIONS",
    "condition",
    "controlled_pod",
    "daemonset",
    "daemonset_status",
    "digest",
    "emit",
    "finish_pod",
    "ip_in",
    "kube_name",
    "mark_deleted",
    "node_address",
    "node_affinity",
    "owner_reference",
    "parse_stamp",
    "pod_ip_on",
    "pod_template_hash",
    "qos_class",
    "relabel",
    "statefulset",
    "terminated",
]

Obj = dict[str, Any]


def owner_reference(owner: Obj) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def relabel(body: Obj, selector: dict[str, str], *, extra: dict[str, str] | None = None) -> Obj:
    """Give a workload the selector its chart really uses (``bodies`` defaults to
    ``app.kubernetes.io/name``): ``selector`` becomes ``spec.selector.matchLabels`` and the pod
    template's labels; with ``extra`` (tracking or chart labels) the object's labels. Extra
    labels stay off the template: Argo CD's tracking label on pods would make it track them."""
    labels = {**selector, **(extra or {})}
    body["spec"]["selector"] = {"matchLabels": dict(selector)}
    template_meta = body["spec"]["template"]["metadata"]
    hash_label = template_meta["labels"].get("pod-template-hash")
    template_meta["labels"] = dict(selector)
    if hash_label:
        template_meta["labels"]["pod-template-hash"] = hash_label
        body["spec"]["selector"]["matchLabels"]["pod-template-hash"] = hash_label
    body["metadata"]["labels"] = {
        **labels,
        **({"pod-template-hash": hash_label} if hash_label else {}),
    }
    return body


def _workload(
    kind: str,
    name: str,
    *,
    namespace: str,
    containers: list[Obj],
    labels: dict[str, str] | None,
    created: datetime,
    pod_spec: Obj | None,
) -> Obj:
    base = bodies.deployment(name, namespace=namespace, containers=containers, created=created)
    meta = base["metadata"]
    meta["uid"] = bodies.uid_for(kind, namespace, name)
    meta["generation"] = 1
    body = {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": base["spec"]}
    if labels:
        relabel(body, labels)
    body["spec"]["template"]["spec"].update(pod_spec or {})
    return body


def daemonset(
    name: str,
    *,
    namespace: str,
    containers: list[Obj],
    created: datetime,
    labels: dict[str, str] | None = None,
    pod_spec: Obj | None = None,
    scheduled: int = 0,
    ready: int | None = None,
) -> Obj:
    """An ``apps/v1`` DaemonSet; ``scheduled``/``ready`` fill its status counters."""
    body = _workload(
        "DaemonSet",
        name,
        namespace=namespace,
        containers=containers,
        labels=labels,
        created=created,
        pod_spec=pod_spec,
    )
    del body["spec"]["replicas"]
    body["spec"]["updateStrategy"] = {
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
        "type": "RollingUpdate",
    }
    body["spec"]["revisionHistoryLimit"] = 10
    body["status"] = daemonset_status(scheduled, scheduled if ready is None else ready)
    return body


def daemonset_status(scheduled: int, ready: int) -> Obj:
    status: Obj = {
        "currentNumberScheduled": scheduled,
        "desiredNumberScheduled": scheduled,
        "numberAvailable": ready,
        "numberMisscheduled": 0,
        "numberReady": ready,
        "observedGeneration": 1,
        "updatedNumberScheduled": scheduled,
    }
    if ready < scheduled:
        status["numberUnavailable"] = scheduled - ready
    return status


def statefulset(
    name: str,
    *,
    namespace: str,
    containers: list[Obj],
    created: datetime,
    replicas: int = 1,
    ready: int | None = None,
    labels: dict[str, str] | None = None,
    pod_spec: Obj | None = None,
) -> Obj:
    """An ``apps/v1`` StatefulSet whose pods are ``<name>-<ordinal>``."""
    body = _workload(
        "StatefulSet",
        name,
        namespace=namespace,
        containers=containers,
        labels=labels,
        created=created,
        pod_spec=pod_spec,
    )
    body["spec"].update(
        {
            "replicas": replicas,
            "serviceName": f"{name}-headless",
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"},
            "revisionHistoryLimit": 10,
        }
    )
    revision = f"{name}-{pod_template_hash('sts', namespace, name)}"
    ready_count = replicas if ready is None else ready
    body["status"] = {
        "availableReplicas": ready_count,
        "collisionCount": 0,
        "currentReplicas": replicas,
        "currentRevision": revision,
        "observedGeneration": 1,
        "readyReplicas": ready_count,
        "replicas": replicas,
        "updateRevision": revision,
        "updatedReplicas": replicas,
    }
    return body


def emit(
    involved: Obj,
    reason: str,
    message: str,
    *,
    first: datetime,
    last: datetime | None = None,
    count: int = 1,
    type: str = "Normal",
    component: str = "kubelet",
    host: str | None = None,
    field_path: str | None = None,
    seq: str = "",
) -> Obj:
    """A ``core/v1`` Event as the recorder writes it (``bodies.event`` plus the details:
    ``involvedObject.fieldPath`` for container events, the object's resourceVersion, no
    namespace for cluster-scoped objects, the kubelet's habit of using the node name as the
    node's uid). ``seq`` tells apart events that would otherwise get the same name."""
    body = bodies.event(
        involved=involved,
        reason=reason,
        message=message,
        type=type,
        count=count,
        first=first,
        last=last,
        component=component,
        host=host,
        name_suffix=digest(
            "event", involved["metadata"]["name"], reason, message, str(first), seq
        ).hex()[:16],
    )
    body["eventTime"] = None
    ref = body["involvedObject"]
    if ref.get("namespace") is None:
        del ref["namespace"]
        if component == "kubelet":
            ref["uid"] = involved["metadata"]["name"]
    if "resourceVersion" in involved["metadata"]:
        ref["resourceVersion"] = involved["metadata"]["resourceVersion"]
    if field_path:
        ref["fieldPath"] = field_path
    return body


def node_affinity(key: str, value: str, *, required: bool = True) -> Obj:
    """``spec.affinity`` asking for nodes labelled ``key=value`` (required or preferred, as
    z2jh's ``matchNodePurpose: require|prefer`` writes it)."""
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
    if required:
        rule: Obj = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    else:
        rule = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"preference": term, "weight": 100}]
        }
    return {"affinity": {"nodeAffinity": rule}}


_KUBELET_CONDITIONS = {
    ("MemoryPressure", "False"): (
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("MemoryPressure", "True"): (
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
    ),
    ("DiskPressure", "False"): ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False"): ("KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True"): ("KubeletReady", "kubelet is posting ready status. AppArmor enabled"),
}


def condition(
    kind: str,
    status: str,
    *,
    beat: datetime,
    since: datetime,
    reason: str | None = None,
    message: str | None = None,
) -> Obj:
    """A node condition; the kubelet's own reason and message unless given."""
    default_reason, default_message = _KUBELET_CONDITIONS.get((kind, status), ("", ""))
    return {
        "lastHeartbeatTime": bodies.stamp(beat),
        "lastTransitionTime": bodies.stamp(since),
        "message": message or default_message,
        "reason": reason or default_reason,
        "status": status,
        "type": kind,
    }
