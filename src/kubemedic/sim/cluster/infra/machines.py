"""Cluster API's Machine controller: a Machine's VM, its Node, and its orderly removal.

What ``internal/controllers/machine`` of CAPI v1.9 does with one Machine (v1beta1):

- **Phases.** ``Pending`` until bootstrap data exists (``spec.bootstrap.dataSecretName``),
  ``Provisioning`` while the infrastructure provider creates the VM, ``Provisioned`` once the
  provider reports ``spec.providerID``, ``Running`` once the Node with that provider ID exists
  (``status.nodeRef``, event ``SuccessfulSetNodeRef`` with the node's name), ``Deleting`` once
  deleted, ``Failed`` with a ``failureReason``. ``status.lastUpdated`` moves with the phase.
- **Conditions** (v1beta1, with ``severity``): ``BootstrapReady`` (``WaitingForDataSecret``),
  ``InfrastructureReady`` (``WaitingForInfrastructure``), ``NodeHealthy`` (``WaitingForNodeRef``,
  ``NodeProvisioning``, ``NodeNotFound``, or ``NodeConditionsFailed`` with ``Node condition
  Ready is Unknown. `` style messages), and ``Ready`` summarizing bootstrap, infrastructure and
  the deletion steps.
- **The Node.** CAPI PATCHes it (strategic merge, field manager ``manager``) with the
  ``cluster.x-k8s.io/{cluster-name,cluster-namespace,machine,owner-kind,owner-name}``
  annotations, the Machine's labels in the ``node-role.kubernetes.io``,
  ``node-restriction.kubernetes.io`` and ``node.cluster.x-k8s.io`` domains (tracked in
  ``cluster.x-k8s.io/labels-from-machine``), and removes ``node.cluster.x-k8s.io/uninitialized``.
- **Deletion.** While any ``pre-drain.delete.hook.machine.cluster.x-k8s.io`` annotation is
  present it waits (``PreDrainDeleteHookSucceeded=False``, ``WaitingExternalHook``). It then
  drains the node unless ``machine.cluster.x-k8s.io/exclude-node-draining`` is set or
  ``spec.nodeDrainTimeout`` has passed: cordon, then evict every pod but DaemonSet and mirror
  pods through the Eviction API (PodDisruptionBudgets answer 429 and the drain retries every
  20 s; ``DrainingSucceeded=False``, reason ``Draining``); on an unreachable node (``Ready``
  Unknown) pods terminating for more than a second are not waited for. Success records
  ``SuccessfulDrainNode`` (``success draining Machine's node "<n>"``). After the
  ``pre-terminate`` hooks it deletes the VM, waits until it is gone, deletes the Node, and only
  then removes the ``machine.cluster.x-k8s.io`` finalizer.

Bootstrap data is simulated: a Machine with a ``bootstrap.configRef`` gets ``dataSecretName:
<machine>`` after ``bootstrap_seconds``, as if the kubeadm bootstrap provider had written it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from kubemedic.model.durations import DurationError, parse_seconds
from kubemedic.sim.cluster.infra.providers import UNINITIALIZED_TAINT, Infrastructure
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Obj

__all__ = ["API_VERSION", "FINALIZER", "MachineController", "condition", "node_ready"]

API_VERSION = "cluster.x-k8s.io/v1beta1"
MACHINES = "machines.cluster.x-k8s.io"
FINALIZER = "machine.cluster.x-k8s.io"
EXCLUDE_DRAIN = "machine.cluster.x-k8s.io/exclude-node-draining"
PRE_DRAIN = "pre-drain.delete.hook.machine.cluster.x-k8s.io"
PRE_TERMINATE = "pre-terminate.delete.hook.machine.cluster.x-k8s.io"
LABELS_FROM_MACHINE = "cluster.x-k8s.io/labels-from-machine"
_NODE_LABEL_DOMAINS = (
    "node-role.kubernetes.io",
    "node-restriction.kubernetes.io",
    "node.cluster.x-k8s.io",
)

Key = tuple[str, str]


def seconds(stamp: Any) -> float:
    """POSIX seconds of an RFC 3339 timestamp (0 for none)."""
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0


def condition(
    old: Iterable[Mapping[str, Any]],
    type_: str,
    status: str,
    stamp: str,
    *,
    reason: str = "",
    message: str = "",
    severity: str = "Info",
) -> dict[str, Any]:
    """A v1beta1 condition (with ``severity`` unless True); its transition time holds while
    the status does."""
    prior = next((c for c in old if c.get("type") == type_), None)
    since = prior["lastTransitionTime"] if prior and prior.get("status") == status else stamp
    cond: dict[str, Any] = {"type": type_, "status": status, "lastTransitionTime": since}
    if status != "True":
        cond.update(reason=reason, severity=severity)
        if message:
            cond["message"] = message
    return cond


def node_ready(node: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The node's ``Ready`` condition when it is ``True`` (``noderefutil.IsNodeReady``)."""
    for cond in (node or {}).get("status", {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            found: Mapping[str, Any] = cond
            return found
    return None


def summarize(node: Mapping[str, Any]) -> tuple[str, str]:
    """``summarizeNodeConditions``: False if a condition is bad, Unknown if all four are
    unknown, else True; the message names every condition that is not healthy."""
    bad = unknown = 0
    message = ""
    for cond in node.get("status", {}).get("conditions") or ():
        type_, status = cond.get("type"), cond.get("status")
        if type_ not in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
            continue
        if status != ("True" if type_ == "Ready" else "False"):
            message += f"Node condition {type_} is {status}. "
            unknown += status == "Unknown"
            bad += status != "Unknown"
    return ("False" if bad else "True" if unknown < 4 else "Unknown"), message


def _duration(text: Any) -> float | None:
    """A Go duration (``10m``, ``1h30m``) in seconds; None when unset, zero (no timeout) or not
    a duration."""
    try:
        return parse_seconds(str(text or "0")) or None
    except DurationError:
        return None


class MachineController:
    """Reconciles one Machine at a time for
    :class:`~kubemedic.sim.cluster.infra.clusterapi.ClusterAPI`."""

    def __init__(
        self,
        sim: Simulation,
        *,
        infrastructure: Infrastructure,
        node_of: Callable[[Obj], Obj | None],
        pods_on: Callable[[str], list[Obj]],
        wake: Callable[[Key, float], None],
        bootstrap_seconds: float,
        drain_retry_seconds: float,
    ) -> None:
        self.sim = sim
        self.infrastructure = infrastructure
        self.node_of = node_of
        self.pods_on = pods_on
        self.wake = wake
        self.bootstrap_seconds = bootstrap_seconds
        self.drain_retry_seconds = drain_retry_seconds
        self.client = Client(sim.server, managers.CAPI_MANAGER)
        self.events = EventRecorder(sim, component="machine-controller", manager="manager")
        self.wrote = False

    def _patch(self, key: Key, patch: Obj, *, status: bool = False) -> None:
        self.client.patch(
            API_VERSION,
            "Machine",
            key[1],
            patch,
            namespace=key[0],
            patch_type="merge",
            subresource="status" if status else "",
        )
        self.wrote = True

    def reconcile(self, key: Key) -> None:
        machine = self.sim.get(MACHINES, *key)
        if machine is None:
            return
        meta, spec = machine["metadata"], machine.get("spec") or {}
        if meta.get("deletionTimestamp"):
            self._delete(key, machine)
            return
        if FINALIZER not in (meta.get("finalizers") or ()):
            self._patch(key, {"metadata": {"finalizers": [*meta.get("finalizers", ()), FINALIZER]}})
            return
        now = self.sim.seconds()
        bootstrap = spec.get("bootstrap") or {}
        if not bootstrap.get("dataSecretName") and bootstrap.get("configRef"):
            due = seconds(meta.get("creationTimestamp")) + self.bootstrap_seconds
            if now < due:
                self.wake(key, due - now)
            else:  # the bootstrap provider wrote the secret; CAPI copies its name
                self._patch(key, {"spec": {"bootstrap": {"dataSecretName": key[1]}}})
                return
        booted = bool(bootstrap.get("dataSecretName"))
        vm = self.infrastructure.vm(*key)
        if vm is None and booted:
            vm = self.infrastructure.provision(machine)
        infra_ready = vm is not None and vm.state == "running"
        if vm is not None and infra_ready and spec.get("providerID") != vm.provider_id:
            self._patch(key, {"spec": {"providerID": vm.provider_id}})
            return
        status = dict(machine.get("status") or {})
        if vm is not None and infra_ready:
            status["addresses"] = [{"type": "InternalIP", "address": vm.address}]
        node = self.node_of(machine) if spec.get("providerID") else None
        stamp, old = rfc3339(self.sim.now()), status.get("conditions") or []
        if node is not None:
            node_name = node["metadata"]["name"]
            if not status.get("nodeRef"):
                self.events.event(machine, "Normal", "SuccessfulSetNodeRef", node_name)
            status["nodeRef"] = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": node_name,
                "uid": node["metadata"].get("uid"),
            }
            status["nodeInfo"] = node.get("status", {}).get("nodeInfo") or {}
            self._label_node(machine, node)
            state, message = summarize(node)
            severity = "Warning" if state == "False" else "Info"
            healthy = condition(
                old,
                "NodeHealthy",
                state,
                stamp,
                reason="NodeConditionsFailed",
                message=message,
                severity=severity,
            )
        elif status.get("nodeRef"):
            healthy = condition(
                old, "NodeHealthy", "False", stamp, reason="NodeNotFound", severity="Error"
            )
        else:
            reason = "NodeProvisioning" if spec.get("providerID") else "WaitingForNodeRef"
            healthy = condition(old, "NodeHealthy", "False", stamp, reason=reason)
        phase = "Pending"
        if booted:
            phase = "Provisioning"
        if spec.get("providerID"):
            phase = "Provisioned"
        if infra_ready and status.get("nodeRef"):
            phase = "Running"
        if status.get("failureReason") or status.get("failureMessage"):
            phase = "Failed"
        parts = [
            condition(
                old,
                "BootstrapReady",
                "True" if booted else "False",
                stamp,
                reason="WaitingForDataSecret",
            ),
            condition(
                old,
                "InfrastructureReady",
                "True" if infra_ready else "False",
                stamp,
                reason="WaitingForInfrastructure",
            ),
        ]
        self._set_status(machine, status, phase, [*parts, healthy], summary=parts)

    def _set_status(
        self, machine: Obj, status: Obj, phase: str, conds: list[Obj], *, summary: list[Obj]
    ) -> None:
        """Write ``status`` with ``phase`` and the conditions, ``Ready`` first (only if changed)."""
        stamp = rfc3339(self.sim.now())
        old = (machine.get("status") or {}).get("conditions") or []
        first = next((c for c in summary if c["status"] != "True"), None)
        ready = (
            condition(old, "Ready", "True", stamp) if first is None else {**first, "type": "Ready"}
        )
        status["conditions"] = [ready, *sorted(conds, key=lambda c: c["type"])]
        for field, type_ in (("bootstrapReady", "Bootstrap"), ("infrastructureReady", "Infra")):
            status[field] = any(
                c["type"].startswith(type_) and c["status"] == "True" for c in conds
            )
        status["observedGeneration"] = machine["metadata"].get("generation", 1)
        if status.get("phase") != phase:
            status["phase"], status["lastUpdated"] = phase, stamp
        current = machine.get("status") or {}
        if any(current.get(k) != v for k, v in status.items()):
            self._patch(_key(machine), {"status": status}, status=True)

    def _label_node(self, machine: Obj, node: Obj) -> None:
        """``patchNode``: CAPI's annotations and managed labels, no uninitialized taint."""
        meta = machine["metadata"]
        owner = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
        notes = {
            "cluster.x-k8s.io/cluster-name": machine["spec"].get("clusterName", ""),
            "cluster.x-k8s.io/cluster-namespace": meta["namespace"],
            "cluster.x-k8s.io/machine": meta["name"],
        }
        if owner:
            notes["cluster.x-k8s.io/owner-kind"] = owner["kind"]
            notes["cluster.x-k8s.io/owner-name"] = owner["name"]
        managed = {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if any(
                k.split("/")[0] == d or k.split("/")[0].endswith("." + d)
                for d in _NODE_LABEL_DOMAINS
            )
        }
        notes[LABELS_FROM_MACHINE] = ",".join(sorted(managed))
        have_notes = node["metadata"].get("annotations") or {}
        have_labels = node["metadata"].get("labels") or {}
        previous = filter(None, have_notes.get(LABELS_FROM_MACHINE, "").split(","))
        labels: dict[str, str | None] = {k: None for k in previous if k not in managed}
        labels.update({k: v for k, v in managed.items() if have_labels.get(k) != v})
        patch: Obj = {}
        if labels or any(have_notes.get(k) != v for k, v in notes.items()):
            patch["metadata"] = {"annotations": notes, "labels": labels}
        taints = node.get("spec", {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != UNINITIALIZED_TAINT["key"]]
        if kept != taints:
            patch["spec"] = {"taints": kept or None}
        if patch:
            self.client.patch("v1", "Node", node["metadata"]["name"], patch)
            self.wrote = True

    # deletion ----------------------------------------------------------------------------------

    def _delete(self, key: Key, machine: Obj) -> None:
        meta = machine["metadata"]
        if FINALIZER not in (meta.get("finalizers") or ()):
            return
        status = dict(machine.get("status") or {})
        stamp, old = rfc3339(self.sim.now()), status.get("conditions") or []
        steps: list[Obj] = [
            c for c in old if c["type"] in ("BootstrapReady", "InfrastructureReady")
        ]
        deleting = condition(old, "Ready", "False", stamp, reason="Deleting")
        notes = meta.get("annotations") or {}
        if any(k.startswith(PRE_DRAIN) for k in notes):
            hook = condition(
                old, "PreDrainDeleteHookSucceeded", "False", stamp, reason="WaitingExternalHook"
            )
            self._set_status(machine, status, "Deleting", [*steps, hook], summary=[deleting])
            return
        node = self.node_of(machine)
        if node is not None and EXCLUDE_DRAIN not in notes and not self._drain_expired(machine):
            drained = self._drain(node)
            steps.append(
                condition(
                    old,
                    "DrainingSucceeded",
                    "True" if drained else "False",
                    stamp,
                    reason="Draining",
                    message="Draining the node before deletion",
                )
            )
            if not drained:
                deletion = dict(status.get("deletion") or {})
                deletion.setdefault("nodeDrainStartTime", stamp)
                status["deletion"] = deletion
                self._set_status(machine, status, "Deleting", steps, summary=[deleting])
                self.wake(key, self.drain_retry_seconds)
                return
            if not any(c["type"] == "DrainingSucceeded" and c["status"] == "True" for c in old):
                text = f'success draining Machine\'s node "{node["metadata"]["name"]}"'
                self.events.event(machine, "Normal", "SuccessfulDrainNode", text)
        if any(k.startswith(PRE_TERMINATE) for k in notes):
            steps.append(
                condition(
                    old,
                    "PreTerminateDeleteHookSucceeded",
                    "False",
                    stamp,
                    reason="WaitingExternalHook",
                )
            )
            self._set_status(machine, status, "Deleting", steps, summary=[deleting])
            return
        vm = self.infrastructure.vm(*key)
        if vm is not None and vm.state != "deleted":
            self.infrastructure.release(*key)
            self._set_status(machine, status, "Deleting", steps, summary=[deleting])
            return
        if node is not None:
            self.client.delete("v1", "Node", node["metadata"]["name"])
        finalizers = [f for f in meta.get("finalizers") or () if f != FINALIZER]
        self._patch(key, {"metadata": {"finalizers": finalizers or None}})

    def _drain_expired(self, machine: Obj) -> bool:
        timeout = _duration(machine["spec"].get("nodeDrainTimeout"))
        started = ((machine.get("status") or {}).get("deletion") or {}).get("nodeDrainStartTime")
        return bool(timeout and started and self.sim.seconds() - seconds(started) > timeout)

    def _drain(self, node: Obj) -> bool:
        """Cordon and evict; True once only pods a drain leaves behind remain."""
        name = node["metadata"]["name"]
        if not node.get("spec", {}).get("unschedulable"):
            self.client.patch("v1", "Node", name, {"spec": {"unschedulable": True}})
            self.wrote = True
        unreachable = any(
            c.get("type") == "Ready" and c.get("status") == "Unknown"
            for c in node.get("status", {}).get("conditions") or ()
        )
        now, done = self.sim.seconds(), True
        for pod in self.pods_on(name):
            meta = pod["metadata"]
            if any(
                r.get("kind") == "DaemonSet" and r.get("controller")
                for r in meta.get("ownerReferences") or ()
            ):
                continue
            if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
                continue
            if meta.get("deletionTimestamp"):
                done &= unreachable and now - seconds(meta["deletionTimestamp"]) > 1
                continue
            done = False
            try:
                self.client.evict(meta["namespace"], meta["name"])
                self.wrote = True
            except errors.StatusError as exc:
                if exc.code not in (404, 429):
                    raise
        return done


def _key(obj: Mapping[str, Any]) -> Key:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]
