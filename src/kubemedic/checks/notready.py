"""``node-not-ready``: nodes whose ``Ready`` condition is not ``True``, how long, and why.

Who writes the condition, and what its words mean:

* ``Ready=Unknown`` is written by the node lifecycle controller (kube-controller-manager) when
  neither the node's Lease nor its status was renewed within ``--node-monitor-grace-period``
  (40s; 50s since Kubernetes 1.32): reason ``NodeStatusUnknown``, message ``Kubelet stopped
  posting node status.`` (``NodeStatusNeverUpdated`` / ``Kubelet never posted node status.`` for a
  node that never did). The kubelet is down or hung, or cannot reach the API server (network,
  certificates, the machine itself is gone). The controller taints the node
  ``node.kubernetes.io/unreachable``.
* ``Ready=False`` is written by the kubelet itself, reason ``KubeletNotReady``, with its errors
  joined (``[a, b]`` when there are several): ``container runtime is down``, ``container runtime
  not ready: RuntimeReady=false …``, ``container runtime status check may not have completed
  yet``, ``PLEG is not healthy: pleg was last seen active 3m5s ago; threshold is 3m0s``,
  ``container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady
  message:Network plugin returns error: cni plugin not initialized``, ``node is shutting down``
  (graceful node shutdown), ``missing node capacity for resources: …``. Taint
  ``node.kubernetes.io/not-ready``.
* ``Ready=True`` but not heard from: since node Leases (1.17+) the kubelet rewrites the status
  heartbeat only every ``nodeStatusReportFrequency`` (5m) when nothing changed, and renews its
  Lease every 10s; the controller flips the node to Unknown one grace period after *both*
  stopped. Liveness is judged by :mod:`kubemedic.model.liveness` as the controller judges it:
  the node was last heard from at the later of its Lease's ``renewTime`` and its ``Ready``
  heartbeat. With the node's Lease in the input, silence longer than ``lease_stale_seconds``
  (the 50s grace, the controller's 5s monitor period and 5s of slack) is stale; a status
  heartbeat minutes old under a fresh Lease is a healthy, quiet node. Without a Lease (a
  snapshot taken without ``kube-node-lease``, or a Lease that does not count: held by someone
  else, no readable ``renewTime``) only the status heartbeat is there, and it is stale past
  ``heartbeat_stale_seconds`` (5m50s: the report frequency plus the grace). Stale means the
  controller did not do its job: the controller manager is down, or the input mixes times.
  Reported as ``heartbeat-stale``.

Cause classes (``causeClass``), the issue's four first, with the extras mapped in ``causeGroup``:
``kubelet-stopped-posting`` (Unknown) | ``runtime-not-ready`` | ``shutting-down`` | ``other``;
``pleg-unhealthy`` and ``network-not-ready`` (both reported by the runtime through CRI Status
and relist) group as ``runtime-not-ready``; ``heartbeat-stale`` groups as
``kubelet-stopped-posting``; ``capacity-misconfigured`` groups as ``other``. When the kubelet
reports several errors, the first class in this order wins: shutting-down, capacity-misconfigured,
runtime-not-ready, pleg-unhealthy, network-not-ready.

Severity: ``critical`` once NotReady for ``critical_after_seconds`` (10 minutes: the point at
which incident 2's controller drains and reboots the node), else ``warning``; nodes NotReady for
less than ``report_after_seconds`` are not reported (a booting node is NotReady until its CNI is
up), nor are *starting* nodes: never Ready since they joined, for less than
``startup_timeout_seconds`` (10 minutes, as Cluster API's ``nodeStartupTimeout``), so a scale-up
of a hundred nodes waiting for their CNI is not an outage. Duration = now - ``lastTransitionTime``
of the Ready condition (a False -> Unknown change restarts it; an absent time gives
``notReadyForSeconds: null`` and ``warning``). Stale heartbeats are ``warning``.

Evidence: ``status``, ``reason``, ``message``, ``causeClass``, ``causeGroup``,
``notReadyForSeconds`` (int or null), ``since`` (RFC 3339 or null), ``lastHeartbeat`` (RFC 3339
or null: the ``Ready`` condition's status heartbeat), ``heartbeatAgeSeconds`` (int or null),
``leaseSeen`` (the node's Lease in ``kube-node-lease`` was in the input), ``leaseRenewed`` (its
``renewTime``, RFC 3339 with microseconds, or null when there is none or it does not count),
``leaseAgeSeconds`` (int or null), ``leaseIgnored`` (why a Lease seen does not count, or null),
``silentForSeconds`` (since the node was last heard from by Lease or status; int or null),
``clockSkewSeconds`` (how far the newest of those times lies ahead of now, int), ``taints``
(the not-ready/unreachable taints present, as ``key:effect``), ``cordoned``
(``spec.unschedulable``), ``nodePool`` (``placement.node_pool``), ``podsOnNode`` (pods bound to
the node and not finished), ``neverReady`` (the condition has not changed since the node
registered). Cause: ``node-not-ready:<causeClass>@<nodePool>``.

Mass outage: when at least ``brake_fraction`` (30%) of nodes, and at least ``brake_min_nodes``
of them, are reported NotReady, one more ``critical`` finding about the cluster
(``kubemedic.io/v1 Cluster cluster``) says repairs should brake: so many nodes failing together
point at a shared cause (network, control plane, a bad rollout) that rebooting nodes one by one
will not fix, and draining them moves load onto the few survivors. The node lifecycle controller
brakes the same way (``--unhealthy-zone-threshold``), as Cluster API's MachineHealthCheck
``maxUnhealthy`` does. Evidence: ``notReady``, ``nodesTotal``, ``percent``, ``thresholdPercent``,
``byCauseClass``, ``byPool``, ``nodes`` (names, first 50). Cause: ``node-not-ready:mass@cluster``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.checks import settings
from kubemedic.checks.findings import CLUSTER, Finding, Severity, cause_part
from kubemedic.checks.registry import check
from kubemedic.model import liveness, objects, placement, timing
from kubemedic.model.objects import Body
from kubemedic.model.view import ClusterView

__all__ = ["NotReadyConfig", "node_not_ready"]

NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")

_GROUPS = {
    "kubelet-stopped-posting": "kubelet-stopped-posting",
    "heartbeat-stale": "kubelet-stopped-posting",
    "runtime-not-ready": "runtime-not-ready",
    "pleg-unhealthy": "runtime-not-ready",
    "network-not-ready": "runtime-not-ready",
    "shutting-down": "shutting-down",
    "capacity-misconfigured": "other",
    "other": "other",
}
_KUBELET_PATTERNS = (
    ("shutting-down", ("node is shutting down", "shutting down")),
    ("capacity-misconfigured", ("missing node capacity",)),
    (
        "runtime-not-ready",
        (
            "container runtime is down",
            "container runtime not ready",
            "container runtime status check",
            "runtimeready=false",
        ),
    ),
    ("pleg-unhealthy", ("pleg is not healthy",)),
    ("network-not-ready", ("network not ready", "networkready=false", "network plugin")),
)


@dataclass(frozen=True, slots=True)
class NotReadyConfig:
    critical_after_seconds: int = 600
    """NotReady this long is critical: incident 2's repair controller drains and reboots here."""
    report_after_seconds: int = 60
    """NotReady for less than this is not reported (a booting node waits for its CNI)."""
    heartbeat_stale_seconds: int = 350
    """Ready=True with a status heartbeat older than this, and no Lease to say otherwise, is
    stale: ``nodeStatusReportFrequency`` (5m) plus ``--node-monitor-grace-period`` (50s)."""
    lease_stale_seconds: int = 60
    """Ready=True with the node's Lease in the input, and neither the Lease nor the status
    heard from for this long, is stale: ``--node-monitor-grace-period`` (50s), the controller's
    ``--node-monitor-period`` (5s) and 5s for watch delivery and listing."""
    brake_fraction: float = 0.3
    """This share of nodes NotReady at once adds the cluster-level "brake repairs" finding."""
    brake_min_nodes: int = settings.number(2, low=1)
    """...provided at least this many nodes are NotReady (one node of one is not a pattern)."""
    startup_timeout_seconds: int = 600
    """A node that has not been Ready since it joined is *starting*, not broken, for this long
    (Cluster API MachineHealthCheck's ``nodeStartupTimeout``, 10m by default): not reported and
    not counted towards the brake. Past it, the node is reported as never having become Ready."""
    joined_slack_seconds: int = 120
    """A Ready condition whose last transition lies within this of the node's creation has never
    changed since the node registered (the kubelet posts NotReady at once, then Ready)."""


def cause_class(status: str, reason: str, message: str) -> str:
    """The cause class of a Ready condition that is not True (see the module docstring)."""
    if status == "Unknown":
        return "kubelet-stopped-posting"
    lowered = f"{reason} {message}".lower()
    for name, needles in _KUBELET_PATTERNS:
        if any(needle in lowered for needle in needles):
            return name
    return "other"


@dataclass(frozen=True, slots=True)
class _Observed:
    name: str
    pool: str
    cause: str
    finding: Finding


@check("node-not-ready", NotReadyConfig)
def node_not_ready(view: ClusterView, config: NotReadyConfig) -> list[Finding]:
    """Nodes NotReady (False/Unknown) or with a stale heartbeat, with duration and cause class."""
    findings: list[Finding] = []
    not_ready: list[_Observed] = []
    for name in sorted(view.nodes):
        node = view.nodes[name]
        observed = _judge(view, node, config)
        if observed is None:
            continue
        findings.append(observed.finding)
        if observed.cause != "heartbeat-stale":
            not_ready.append(observed)
    mass = _mass_outage(view, not_ready, config)
    if mass is not None:
        findings.append(mass)
    return findings


def _ready_condition(node: Body) -> Mapping[str, Any] | None:
    for condition in objects.get_list(node, "status", "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return None


def _judge(view: ClusterView, node: Body, config: NotReadyConfig) -> _Observed | None:
    condition = _ready_condition(node)
    if condition is None:
        return None  # not registered yet; the lifecycle controller adds Unknown after the grace
    status = str(condition.get("status") or "Unknown")
    reason = str(condition.get("reason") or "")
    message = str(condition.get("message") or "")
    since = objects.parse_time(condition.get("lastTransitionTime"))
    heartbeat = objects.parse_time(condition.get("lastHeartbeatTime"))
    heartbeat_age = timing.seconds_since(view.now, heartbeat)
    name = objects.get_str(node, "metadata", "name") or "?"
    alive = liveness.judge(node, view.node_lease(name), view.now)

    if status == "True":
        if alive.stale_for is None or alive.stale_for < _stale_after(alive, config):
            return None
        klass, down_for = "heartbeat-stale", None
        severity = Severity.WARNING
    else:
        klass = cause_class(status, reason, message)
        down_for = timing.seconds_since(view.now, since)
        if down_for is not None and down_for < config.report_after_seconds:
            return None
        never_ready = _never_ready(node, since, config)
        if never_ready and (down_for or 0) < config.startup_timeout_seconds:
            return None  # still starting: a scale-up, not a failure
        critical = down_for is not None and down_for >= config.critical_after_seconds
        severity = Severity.CRITICAL if critical else Severity.WARNING

    pool = placement.node_pool(node)
    evidence = {
        "status": status,
        "reason": reason,
        "message": message,
        "causeClass": klass,
        "causeGroup": _GROUPS[klass],
        "notReadyForSeconds": down_for,
        "since": objects.format_time(since) if since else None,
        "lastHeartbeat": objects.format_time(heartbeat) if heartbeat else None,
        "heartbeatAgeSeconds": heartbeat_age,
        "leaseSeen": alive.lease_seen,
        "leaseRenewed": (
            objects.format_micro_time(alive.lease_renewed) if alive.lease_renewed else None
        ),
        "leaseAgeSeconds": timing.seconds_since(view.now, alive.lease_renewed),
        "leaseIgnored": alive.lease_ignored or None,
        "silentForSeconds": None if alive.stale_for is None else int(alive.stale_for),
        "clockSkewSeconds": int(alive.skew_seconds),
        "taints": _not_ready_taints(node),
        "cordoned": objects.get_map(node, "spec").get("unschedulable") is True,
        "nodePool": pool,
        "podsOnNode": len(placement.resident_pods(view, name)),
        "neverReady": status != "True" and _never_ready(node, since, config),
    }
    finding = Finding(
        check="node-not-ready",
        severity=severity,
        object=objects.ref_of(node),
        message=_message(name, evidence, config),
        cause=f"node-not-ready:{klass}@{cause_part(pool)}",
        first_seen=(alive.last_heard if klass == "heartbeat-stale" else since) or view.now,
        last_seen=view.now,
        evidence=evidence,
    )
    return _Observed(name=name, pool=pool, cause=klass, finding=finding)


def _stale_after(alive: liveness.Liveness, config: NotReadyConfig) -> int:
    """How long a Ready node may go unheard: a Lease is renewed every 10s, a quiet status only
    every 5 minutes."""
    return config.lease_stale_seconds if alive.lease_counted else config.heartbeat_stale_seconds


def _never_ready(node: Body, since: datetime | None, config: NotReadyConfig) -> bool:
    """Whether the Ready condition has not changed since the node registered."""
    created = timing.created_at(node)
    if created is None or since is None:
        return False
    return (since - created).total_seconds() <= config.joined_slack_seconds


def _message(name: str, evidence: Mapping[str, Any], config: NotReadyConfig) -> str:
    age = evidence["heartbeatAgeSeconds"]
    if evidence["causeClass"] == "heartbeat-stale":
        if evidence["leaseRenewed"] is not None:
            silent = timing.human_duration(evidence["silentForSeconds"])
            stale_after = timing.human_duration(config.lease_stale_seconds)
            return (
                f"Node {name} is Ready but has not been heard from for {silent}: its Lease was "
                f"last renewed {timing.human_duration(evidence['leaseAgeSeconds'])} ago and its "
                f"status heartbeat is {timing.human_duration(age)} old (stale after "
                f"{stale_after}), so nobody is checking it."
            )
        stale_after = timing.human_duration(config.heartbeat_stale_seconds)
        lease = _lease_words(evidence)
        return (
            f"Node {name} is Ready but its last heartbeat is {timing.human_duration(age)} old "
            f"(stale after {stale_after}; {lease}), so nobody is checking it."
        )
    down_for = evidence["notReadyForSeconds"]
    how_long = "(since unknown)" if down_for is None else f"for {timing.human_duration(down_for)}"
    detail = evidence["message"] or evidence["reason"] or "no message"
    threshold = timing.human_duration(config.critical_after_seconds)
    repair = (
        f"past the {threshold} repair threshold"
        if down_for is not None and down_for >= config.critical_after_seconds
        else f"repair threshold {threshold}"
    )
    joined = " and has never been Ready since it joined" if evidence["neverReady"] else ""
    return (
        f"Node {name} has been NotReady {how_long}{joined} (Ready={evidence['status']}, "
        f"{evidence['causeClass']}: {detail}; {repair}, {evidence['podsOnNode']} pods on it)."
    )


def _lease_words(evidence: Mapping[str, Any]) -> str:
    if not evidence["leaseSeen"]:
        return f"no Lease in {liveness.NODE_LEASE_NAMESPACE} seen"
    return f"its Lease does not count: {evidence['leaseIgnored']}"


def _mass_outage(
    view: ClusterView, not_ready: list[_Observed], config: NotReadyConfig
) -> Finding | None:
    total = len(view.nodes)
    count = len(not_ready)
    if total == 0 or count < config.brake_min_nodes or count / total < config.brake_fraction:
        return None
    percent = round(100 * count / total, 1)
    by_class = Counter(item.cause for item in not_ready)
    by_pool = Counter(item.pool for item in not_ready)
    return Finding(
        check="node-not-ready",
        severity=Severity.CRITICAL,
        object=CLUSTER,
        message=(
            f"{count} of {total} nodes ({percent}%) are NotReady at once, at or above the "
            f"{round(100 * config.brake_fraction, 1)}% brake: repairs should pause, the cause is "
            "likely shared."
        ),
        cause="node-not-ready:mass@cluster",
        first_seen=min(item.finding.first_seen for item in not_ready),
        last_seen=view.now,
        evidence={
            "notReady": count,
            "nodesTotal": total,
            "percent": percent,
            "thresholdPercent": round(100 * config.brake_fraction, 1),
            "byCauseClass": dict(sorted(by_class.items())),
            "byPool": dict(sorted(by_pool.items())),
            "nodes": [item.name for item in not_ready][:50],
        },
    )


def _not_ready_taints(node: Body) -> list[str]:
    found: list[str] = []
    for taint in objects.get_list(node, "spec", "taints"):
        if isinstance(taint, Mapping) and taint.get("key") in NOT_READY_TAINTS:
            found.append(f"{taint.get('key')}:{taint.get('effect') or ''}")
    return sorted(found)
