"""Kubernetes bodies to :class:`~kubemedic.repair.policy.records.NodeObservation`.

Reads Nodes, their Leases in ``kube-node-lease`` and the Cluster API objects behind them:

* a Machine is matched to its node by ``status.nodeRef.name`` (or the node's
  ``cluster.x-k8s.io/machine`` annotation with ``cluster.x-k8s.io/cluster-namespace``);
* its owner is the controlling owner reference (a MachineSet recreates a deleted Machine; a bare
  Machine is not recreated by anything);
* its *group* is the MachineDeployment owning that MachineSet, else the MachineSet: the object
  the cluster-autoscaler scales and on which ``cluster.x-k8s.io/cluster-api-autoscaler-node-group-
  min-size`` sits; ``group_ready`` counts the group's Ready nodes.

Zones come from ``topology.kubernetes.io/zone`` (or the deprecated beta label); pools from the
repair settings' ``pools`` (the first selector that matches), else from the labels every check
uses (:func:`kubemedic.model.placement.node_pool`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kubemedic.model import liveness, objects, placement
from kubemedic.repair.policy.records import Condition, MachineRef, NodeObservation
from kubemedic.repair.policy.settings import RepairSettings

__all__ = ["MIN_SIZE", "ZONE_LABELS", "observe"]

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"

Body = Mapping[str, Any]


def observe(bodies: Iterable[Body], settings: RepairSettings) -> tuple[NodeObservation, ...]:
    """Every Node among ``bodies``, with its Lease and Machine, sorted by name."""
    nodes: list[Body] = []
    leases: dict[str, Body] = {}
    machines: list[Body] = []
    owners: dict[tuple[str, str, str], Body] = {}
    for body in bodies:
        kind = body.get("kind")
        if kind == "Node":
            nodes.append(body)
        elif kind == "Lease" and _namespace(body) == liveness.NODE_LEASE_NAMESPACE:
            leases[_name(body)] = body
        elif kind == "Machine":
            machines.append(body)
        elif kind in ("MachineSet", "MachineDeployment"):
            owners[(str(kind), _namespace(body), _name(body))] = body
    by_node = _machines_by_node(machines, nodes)
    groups = {name: _group(machine, owners) for name, machine in by_node.items()}
    named = {_name(node): node for node in nodes}
    ready = Counter(
        groups[name][0] for name in by_node if groups[name][0] and _ready(named.get(name))
    )
    observed = []
    for node in nodes:
        name = _name(node)
        machine = by_node.get(name)
        ref = None
        if machine is not None:
            group, minimum = groups[name]
            ref = MachineRef(
                namespace=_namespace(machine),
                name=_name(machine),
                owner=_controller(machine),
                group=group,
                group_min=minimum,
                group_ready=ready.get(group, 0),
            )
        observed.append(_observation(node, leases.get(name), ref, settings))
    return tuple(sorted(observed, key=lambda n: n.name))


def _observation(
    node: Body, lease: Body | None, machine: MachineRef | None, settings: RepairSettings
) -> NodeObservation:
    meta = objects.get_map(node, "metadata")
    labels = {str(k): str(v) for k, v in objects.get_map(meta, "labels").items()}
    annotations = {str(k): str(v) for k, v in objects.get_map(meta, "annotations").items()}
    pool = settings.pool_for(labels)
    return NodeObservation(
        name=_name(node),
        uid=str(meta.get("uid") or ""),
        created=objects.parse_time(meta.get("creationTimestamp")),
        labels=labels,
        annotations=annotations,
        unschedulable=objects.get_map(node, "spec").get("unschedulable") is True,
        taints=tuple(
            (str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
            for t in objects.get_list(node, "spec", "taints")
            if isinstance(t, Mapping)
        ),
        provider_id=objects.get_str(node, "spec", "providerID") or "",
        boot_id=objects.get_str(node, "status", "nodeInfo", "bootID") or "",
        conditions=_conditions(node),
        lease_renewed=liveness.lease_renewed(node, lease),
        zone=next((labels[key] for key in ZONE_LABELS if labels.get(key)), ""),
        pool=pool.name if pool is not None else placement.node_pool(node),
        machine=machine,
    )


def _conditions(node: Body) -> dict[str, Condition]:
    found: dict[str, Condition] = {}
    for item in objects.get_list(node, "status", "conditions"):
        if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
            continue
        found[item["type"]] = Condition(
            type=item["type"],
            status=str(item.get("status") or "Unknown"),
            since=objects.parse_time(item.get("lastTransitionTime")),
            heartbeat=objects.parse_time(item.get("lastHeartbeatTime")),
            reason=str(item.get("reason") or ""),
            message=str(item.get("message") or ""),
        )
    return found


def _machines_by_node(machines: list[Body], nodes: list[Body]) -> dict[str, Body]:
    found: dict[str, Body] = {}
    by_name = {(_namespace(m), _name(m)): m for m in machines}
    for machine in machines:
        node = objects.get_str(machine, "status", "nodeRef", "name")
        if node:
            found[node] = machine
    for body in nodes:
        annotations = objects.get_map(body, "metadata", "annotations")
        name = annotations.get("cluster.x-k8s.io/machine")
        namespace = annotations.get("cluster.x-k8s.io/cluster-namespace") or "default"
        if isinstance(name, str) and _name(body) not in found:
            owned = by_name.get((str(namespace), name))
            if owned is not None:
                found[_name(body)] = owned
    return found


def _controller(body: Body) -> str:
    for ref in objects.get_list(body, "metadata", "ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _group(machine: Body, owners: Mapping[tuple[str, str, str], Body]) -> tuple[str, int | None]:
    """The MachineDeployment (else MachineSet) the autoscaler scales, and its minimum size."""
    namespace = _namespace(machine)
    owner = _controller(machine)
    if not owner.startswith("MachineSet/"):
        return "", None
    machine_set = owners.get(("MachineSet", namespace, owner.split("/", 1)[1]))
    group_body: Body | None = machine_set
    group = owner
    if machine_set is not None:
        above = _controller(machine_set)
        if above.startswith("MachineDeployment/"):
            group = above
            group_body = owners.get(("MachineDeployment", namespace, above.split("/", 1)[1]))
    minimum = None
    if group_body is not None:
        raw = objects.get_map(group_body, "metadata", "annotations").get(MIN_SIZE)
        if isinstance(raw, str) and raw.strip().isdigit():
            minimum = int(raw.strip())
    return f"{namespace}/{group}", minimum


def _ready(node: Body | None) -> bool:
    if node is None:
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in objects.get_list(node, "status", "conditions")
    )


def _name(body: Body) -> str:
    return objects.get_str(body, "metadata", "name") or ""


def _namespace(body: Body) -> str:
    return objects.get_str(body, "metadata", "namespace") or ""
