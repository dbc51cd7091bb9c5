"""The column definitions of the Tables the API server prints built-in kinds in.

``pkg/printers/internalversion/printers.go`` registers, per resource, the columns ``kubectl
get`` shows (:func:`for_resource`): their names, types, formats and descriptions. The
descriptions come from the official OpenAPI documents (:func:`description`: the same doc
comments the Go ``SwaggerDoc`` holds; the few columns documented from retired
``extensions/v1beta1`` types use the ``apps/v1`` text). Columns of ``priority: 1`` are the ones
kubectl hides without ``-o wide``. The cells under them are
:mod:`kubemedic.sim.apiserver.tables.printing`'s.
"""

from __future__ import annotations

import functools
from typing import Any

from kubemedic.sim.machinery import definitions as schema

__all__ = ["NAME", "column", "description", "for_resource"]


_APPS, _PARTS = ("Deployment", "ReplicaSet", "DaemonSet"), ("Spec", "Status")
_BATCH = ("Job", "CronJob")
_DEFINITIONS = {
    "ObjectMeta": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "LeaseSpec": "io.k8s.api.coordination.v1.LeaseSpec",
    "PriorityClass": "io.k8s.api.scheduling.v1.PriorityClass",
    **{f"{kind}{part}": f"io.k8s.api.batch.v1.{kind}{part}" for kind in _BATCH for part in _PARTS},
    **{f"{kind}{part}": f"io.k8s.api.apps.v1.{kind}{part}" for kind in _APPS for part in _PARTS},
}


@functools.cache
def description(ref: str) -> str:
    """The OpenAPI description of ``Type.field`` (core/v1 unless listed), '' when unknown."""
    type_name, field = ref.split(".")
    full = _DEFINITIONS.get(type_name, f"io.k8s.api.core.v1.{type_name}")
    body = schema.definitions().raw.get(full) or {}
    return str((body.get("properties") or {}).get(field, {}).get("description", ""))


def column(name: str, kind: str, doc: str, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    """A ``TableColumnDefinition``; ``doc`` is literal text or ``@Type.field``."""
    text = description(doc[1:]) if doc.startswith("@") else doc
    return {"name": name, "type": kind, "format": fmt, "description": text, "priority": priority}


_S, _I = "string", "integer"
NAME = ("Name", _S, "@ObjectMeta.name", 0, "name")
"""The ``Name`` column (:func:`column` arguments), first in custom resource tables too."""
_AGE = ("Age", _S, "@ObjectMeta.creationTimestamp")
_CONTAINERS = ("Containers", _S, "Names of each container in the template.", 1)
_IMAGES = ("Images", _S, "Images referenced by each container in the template.", 1)
_READY = ("Ready", _S, "Number of the pod with ready state")
_Spec = tuple[Any, ...]
#: printers.go's column definitions, per (group, resource).
_SPECS: dict[tuple[str, str], tuple[_Spec, ...]] = {
    ("", "pods"): (
        NAME,
        ("Ready", _S, "The aggregate readiness state of this pod for accepting traffic."),
        ("Status", _S, "The aggregate status of the containers in this pod."),
        (
            "Restarts",
            _S,
            "The number of times the containers in this pod have been restarted "
            "and when the last container in this pod has restarted.",
        ),
        _AGE,
        ("IP", _S, "@PodStatus.podIP", 1),
        ("Node", _S, "@PodSpec.nodeName", 1),
        ("Nominated Node", _S, "@PodStatus.nominatedNodeName", 1),
        ("Readiness Gates", _S, "@PodSpec.readinessGates", 1),
    ),
    ("", "nodes"): (
        NAME,
        ("Status", _S, "The status of the node"),
        ("Roles", _S, "The roles of the node"),
        _AGE,
        ("Version", _S, "@NodeSystemInfo.kubeletVersion"),
        ("Internal-IP", _S, "@NodeStatus.addresses", 1),
        ("External-IP", _S, "@NodeStatus.addresses", 1),
        ("OS-Image", _S, "@NodeSystemInfo.osImage", 1),
        ("Kernel-Version", _S, "@NodeSystemInfo.kernelVersion", 1),
        ("Container-Runtime", _S, "@NodeSystemInfo.containerRuntimeVersion", 1),
    ),
    ("apps", "deployments"): (
        NAME,
        _READY,
        ("Up-to-date", _S, "@DeploymentStatus.updatedReplicas"),
        ("Available", _S, "@DeploymentStatus.availableReplicas"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@DeploymentSpec.selector", 1),
    ),
    ("apps", "replicasets"): (
        NAME,
        ("Desired", _I, "@ReplicaSetSpec.replicas"),
        ("Current", _I, "@ReplicaSetStatus.replicas"),
        ("Ready", _I, "@ReplicaSetStatus.readyReplicas"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@ReplicaSetSpec.selector", 1),
    ),
    ("apps", "statefulsets"): (NAME, _READY, _AGE, _CONTAINERS, _IMAGES),
    ("apps", "daemonsets"): (
        NAME,
        ("Desired", _I, "@DaemonSetStatus.desiredNumberScheduled"),
        ("Current", _I, "@DaemonSetStatus.currentNumberScheduled"),
        ("Ready", _I, "@DaemonSetStatus.numberReady"),
        ("Up-to-date", _I, "@DaemonSetStatus.updatedNumberScheduled"),
        ("Available", _I, "@DaemonSetStatus.numberAvailable"),
        ("Node Selector", _S, "@PodSpec.nodeSelector"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@DaemonSetSpec.selector", 1),
    ),
    ("", "replicationcontrollers"): (
        NAME,
        ("Desired", _I, "@ReplicationControllerSpec.replicas"),
        ("Current", _I, "@ReplicationControllerStatus.replicas"),
        ("Ready", _I, "@ReplicationControllerStatus.readyReplicas"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@ReplicationControllerSpec.selector", 1),
    ),
    ("batch", "jobs"): (
        NAME,
        ("Status", _S, "Status of the job."),
        ("Completions", _S, "@JobStatus.succeeded"),
        ("Duration", _S, "Time required to complete the job."),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@JobSpec.selector", 1),
    ),
    ("batch", "cronjobs"): (
        NAME,
        ("Schedule", _S, "@CronJobSpec.schedule"),
        ("Timezone", _S, "@CronJobSpec.timeZone"),
        ("Suspend", "boolean", "@CronJobSpec.suspend"),
        ("Active", _I, "@CronJobStatus.active"),
        ("Last Schedule", _S, "@CronJobStatus.lastScheduleTime"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@JobSpec.selector", 1),
    ),
    ("scheduling.k8s.io", "priorityclasses"): (
        NAME,
        ("Value", _I, "@PriorityClass.value"),
        ("Global-Default", "boolean", "@PriorityClass.globalDefault"),
        _AGE,
        ("PreemptionPolicy", _S, "@PriorityClass.preemptionPolicy"),
    ),
    ("", "services"): (
        NAME,
        ("Type", _S, "@ServiceSpec.type"),
        ("Cluster-IP", _S, "@ServiceSpec.clusterIP"),
        ("External-IP", _S, "@ServiceSpec.externalIPs"),
        ("Port(s)", _S, "@ServiceSpec.ports"),
        _AGE,
        ("Selector", _S, "@ServiceSpec.selector", 1),
    ),
    ("", "events"): (
        ("Last Seen", _S, "@Event.lastTimestamp"),
        ("Type", _S, "@Event.type"),
        ("Reason", _S, "@Event.reason"),
        ("Object", _S, "@Event.involvedObject"),
        ("Subobject", _S, "@ObjectReference.fieldPath", 1),
        ("Source", _S, "@Event.source", 1),
        ("Message", _S, "@Event.message"),
        ("First Seen", _S, "@Event.firstTimestamp", 1),
        ("Count", _S, "@Event.count", 1),
        ("Name", _S, "@ObjectMeta.name", 1, "name"),
    ),
    ("", "namespaces"): (NAME, ("Status", _S, "The status of the namespace"), _AGE),
    ("", "configmaps"): (NAME, ("Data", _S, "@ConfigMap.data"), _AGE),
    ("", "secrets"): (NAME, ("Type", _S, "@Secret.type"), ("Data", _S, "@Secret.data"), _AGE),
    ("", "serviceaccounts"): (NAME, ("Secrets", _S, "@ServiceAccount.secrets"), _AGE),
    ("policy", "poddisruptionbudgets"): (
        NAME,
        ("Min Available", _S, "The minimum number of pods that must be available."),
        ("Max Unavailable", _S, "The maximum number of pods that may be unavailable."),
        (
            "Allowed Disruptions",
            _I,
            "Calculated number of pods that may be disrupted at this time.",
        ),
        _AGE,
    ),
    ("coordination.k8s.io", "leases"): (NAME, ("Holder", _S, "@LeaseSpec.holderIdentity"), _AGE),
}
_SPECS[("events.k8s.io", "events")] = _SPECS[("", "events")]


@functools.cache
def for_resource(key: tuple[str, str]) -> tuple[dict[str, Any], ...]:
    """The column definitions of ``(group, resource)``'s built-in printer; empty without one."""
    return tuple(column(*spec) for spec in _SPECS.get(key, ()))
