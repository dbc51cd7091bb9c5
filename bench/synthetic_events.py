"""Synthetic events: the reasons a busy cluster records, in both Event APIs.

The same Event is served by ``core/v1`` (``involvedObject``, ``message``, ``count``,
``first/lastTimestamp``, ``source``) and by ``events.k8s.io/v1`` (``regarding``, ``note``,
``deprecated*`` copies of the old fields, ``reportingController``); a snapshot may hold either,
so every 20th event here comes in the v1 shape. Node-level reasons (``OOMKilling``,
``SystemOOM``, ``NodeNotReady``) are about the Node half of the time and about a pod otherwise.
"""

from __future__ import annotations

import random
from datetime import timedelta

from kubemedic.testing import bodies as b
from synthetic_templates import NOW, Obj, copier, uid

EVENT_REASONS = (  # (reason, type, component, share, message)
    (
        "Scheduled",
        "Normal",
        "default-scheduler",
        0.12,
        "Successfully assigned {ns}/{pod} to {node}",
    ),
    ("Pulled", "Normal", "kubelet", 0.12, 'Container image "registry.example/app:1.0" present'),
    ("Created", "Normal", "kubelet", 0.08, "Created container app"),
    ("Started", "Normal", "kubelet", 0.08, "Started container app"),
    (
        "FailedScheduling",
        "Warning",
        "default-scheduler",
        0.14,
        "0/{nodes} nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
        "23 Insufficient cpu, 24 Insufficient memory, 96 node(s) had untolerated taint "
        "{{node.kubernetes.io/not-ready: }}. preemption: 0/{nodes} nodes are available.",
    ),
    (
        "Unhealthy",
        "Warning",
        "kubelet",
        0.14,
        'Liveness probe failed: Get "http://10.0.0.1:8081/health": context deadline exceeded',
    ),
    ("BackOff", "Warning", "kubelet", 0.08, "Back-off restarting failed container app"),
    (
        "Killing",
        "Normal",
        "kubelet",
        0.05,
        "Container app failed liveness probe, will be restarted",
    ),
    (
        "Evicted",
        "Warning",
        "kubelet",
        0.04,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi. "
        "Container app was using 900Mi, request is 128Mi, has larger consumption of memory.",
    ),
    (
        "OOMKilling",
        "Warning",
        "kernel-monitor",
        0.03,
        "Memory cgroup out of memory: Killed process 4242 (java) total-vm:5242880kB",
    ),
    ("NodeNotReady", "Normal", "node-controller", 0.04, "Node {node} status is now: NodeNotReady"),
    ("SuccessfulCreate", "Normal", "replicaset-controller", 0.05, "Created pod: {pod}"),
    (
        "FailedCreate",
        "Warning",
        "replicaset-controller",
        0.01,
        'Error creating: pods "{pod}" is forbidden: exceeded quota: compute-resources',
    ),
    ("SystemOOM", "Warning", "kubelet", 0.02, "System OOM encountered, victim process: java"),
)


def events(
    rng: random.Random, pod_list: list[Obj], node_list: list[Obj], count: int
) -> tuple[list[Obj], list[Obj]]:
    """``count`` events with reasons drawn by ``EVENT_REASONS`` share; returns (core/v1 events,
    events.k8s.io/v1 events). FailedScheduling is about Pending pods, half of the node-level
    reasons about nodes, the rest about random pods."""
    reasons = [r for r in EVENT_REASONS]
    weights = [r[3] for r in reasons]
    pending = [p for p in pod_list if p["status"]["phase"] == "Pending"] or pod_list
    core_events: list[Obj] = []
    new_events: list[Obj] = []
    copies = {
        r[0]: copier(
            b.event(involved=pod_list[0], reason=r[0], message="", type=r[1], component=r[2])
        )
        for r in reasons
    }
    for i, (reason, _, _, _, text) in enumerate(rng.choices(reasons, weights, k=count)):
        about_node = reason in ("OOMKilling", "SystemOOM", "NodeNotReady") and i % 2 == 0
        target = (
            rng.choice(node_list)
            if about_node
            else rng.choice(pending)
            if reason == "FailedScheduling"
            else rng.choice(pod_list)
        )
        meta = target["metadata"]
        node_name = meta["name"] if about_node else target["spec"].get("nodeName", "")
        body = copies[reason]()
        first = NOW - timedelta(seconds=rng.randint(60, 3600))
        last = min(NOW, first + timedelta(seconds=rng.randint(0, 1800)))
        body["metadata"].update(
            name=f"{meta['name']}.{i:016x}",
            uid=uid("event", i),
            namespace=meta.get("namespace", "default"),
            creationTimestamp=b.stamp(first),
        )
        body["involvedObject"] = {
            "apiVersion": target["apiVersion"],
            "kind": target["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta["uid"],
        }
        body.update(
            message=text.format(
                ns=meta.get("namespace"), pod=meta["name"], node=node_name, nodes=len(node_list)
            ),
            count=rng.randint(1, 30),
            firstTimestamp=b.stamp(first),
            lastTimestamp=b.stamp(last),
        )
        body["source"]["host"] = node_name
        if i % 20:
            core_events.append(body)
        else:  # served in the events.k8s.io/v1 shape
            new_events.append(
                {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": body["metadata"],
                    "regarding": body["involvedObject"],
                    "reason": reason,
                    "note": body["message"],
                    "type": body["type"],
                    "eventTime": None,
                    "reportingController": body["source"]["component"],
                    "reportingInstance": node_name,
                    "action": reason,
                    "deprecatedCount": body["count"],
                    "deprecatedFirstTimestamp": body["firstTimestamp"],
                    "deprecatedLastTimestamp": body["lastTimestamp"],
                    "deprecatedSource": body["source"],
                }
            )
    return core_events, new_events
