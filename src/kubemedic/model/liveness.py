"""When a node was last heard from, as the node lifecycle controller judges it.

A kubelet (1.17+) sends two signs of life:

* its **node Lease**, ``kube-node-lease/<node>`` (``coordination.k8s.io/v1``), whose
  ``spec.renewTime`` (a ``MicroTime``) it renews every ``renewInterval``: a quarter of
  ``leaseDurationSeconds`` (40 s), so every 10 s; ``spec.holderIdentity`` is the node's name and
  the Lease is owned by the Node;
* its **status**, whose ``Ready`` condition carries ``lastHeartbeatTime``; the kubelet checks
  every ``nodeStatusUpdateFrequency`` (10 s) but posts only when something changed or
  ``nodeStatusReportFrequency`` (5 minutes) has passed, so a healthy, quiet node's status
  heartbeat is up to about 5 minutes old.

kube-controller-manager's node lifecycle controller (``tryUpdateNodeHealth`` in
``pkg/controller/nodelifecycle/node_lifecycle_controller.go``) keeps, per node, the time it last
*observed* either sign change (``probeTimestamp``): a ``Ready`` condition whose
``lastHeartbeatTime`` differs from the one it saved, or a Lease whose ``renewTime`` is after the
saved one ("Always update the probe time if node lease is renewed"). Once
``--node-monitor-grace-period`` passes after that without news, it sets ``Ready`` (and the
pressure conditions) to ``Unknown``, "Kubelet stopped posting node status.". The default grace
is 50 s since Kubernetes 1.32 (kubernetes/kubernetes#126287; 40 s before), checked every
``--node-monitor-period`` (5 s). The controller reads the Lease named after the node in
``kube-node-lease`` and does not compare its holder.

A scan sees one moment, not a stream of changes, so it judges by the times written:
``last_heard`` is the later of the Lease's ``renewTime`` and the ``Ready`` condition's
``lastHeartbeatTime``, and ``stale_for`` is how long before ``now`` that was. Where kubemedic is
stricter than the controller, it says why in ``lease_ignored``:

* a Lease whose ``holderIdentity`` is set and is not the node's name is somebody else's writes,
  not this kubelet's: not counted;
* a Lease (or heartbeat) time that is missing or not RFC 3339 is not counted (and a Lease not in
  ``kube-node-lease`` or not named after the node is not this node's);
* times are written by the kubelet's clock and judged by the API server's: a time ahead of
  ``now`` (clock skew, or objects read after the clock) counts as heard at ``now``, and the
  skew is kept in ``skew_seconds``. The controller, comparing its own observation times, is
  immune to skew; a scan is not, so it reports it.

Pure: no clock is read; ``now`` is the caller's (the view's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.model import objects

__all__ = [
    "LEASE_RENEW_SECONDS",
    "NODE_LEASE_NAMESPACE",
    "NODE_MONITOR_GRACE_SECONDS",
    "STATUS_REPORT_SECONDS",
    "Liveness",
    "judge",
    "judge_times",
    "lease_renewed",
]

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_MONITOR_GRACE_SECONDS = 50
"""``--node-monitor-grace-period`` of kube-controller-manager 1.32 (40 s before 1.32)."""
LEASE_RENEW_SECONDS = 10
"""The kubelet's Lease ``renewInterval``: 0.25 x ``leaseDurationSeconds`` (40 s)."""
STATUS_REPORT_SECONDS = 300
"""The kubelet's ``nodeStatusReportFrequency``: an unchanged status is posted this often."""


@dataclass(frozen=True, slots=True)
class Liveness:
    """A node's signs of life at ``now`` (see the module docstring)."""

    last_heard: datetime | None
    """The later of ``lease_renewed`` and ``status_heartbeat``, no later than ``now``; None when
    neither is known."""
    lease_renewed: datetime | None
    """The node Lease's ``spec.renewTime`` as written, when the Lease is counted."""
    status_heartbeat: datetime | None
    """The ``Ready`` condition's ``lastHeartbeatTime`` as written."""
    stale_for: float | None
    """Seconds from ``last_heard`` to ``now`` (0 or more); None when never heard from."""
    lease_seen: bool = False
    """A Lease was given for the node (counted or not)."""
    lease_ignored: str = ""
    """Why a given Lease was not counted ("" when counted or when there was none)."""
    skew_seconds: float = 0.0
    """How far the newest counted time lies ahead of ``now`` (0 when none does)."""

    @property
    def lease_counted(self) -> bool:
        """The Lease's renewal is part of ``last_heard``."""
        return self.lease_renewed is not None

    def alive(self, grace_seconds: float = NODE_MONITOR_GRACE_SECONDS) -> bool:
        """Heard from within ``grace_seconds`` of ``now``: what the controller requires to
        leave ``Ready`` alone."""
        return self.stale_for is not None and self.stale_for <= grace_seconds


def judge(node: Mapping[str, Any], lease: Mapping[str, Any] | None, now: datetime) -> Liveness:
    """The liveness of ``node`` at ``now``, from its status and ``lease`` (its Lease in
    ``kube-node-lease``, or None when none was read)."""
    heartbeat = objects.parse_time(_ready(node).get("lastHeartbeatTime"))
    renewed, ignored = (None, "") if lease is None else _renewal(node, lease)
    return judge_times(heartbeat, renewed, now, lease_seen=lease is not None, lease_ignored=ignored)


def judge_times(
    status_heartbeat: datetime | None,
    lease_renewed: datetime | None,
    now: datetime,
    *,
    lease_seen: bool | None = None,
    lease_ignored: str = "",
) -> Liveness:
    """The same judgement from the two times already read (a ``Ready`` condition's heartbeat,
    a counted Lease's renewal, as :func:`lease_renewed` gives it). ``lease_seen`` defaults to
    whether ``lease_renewed`` is known."""
    seen = lease_renewed is not None if lease_seen is None else lease_seen
    known = [time for time in (lease_renewed, status_heartbeat) if time is not None]
    if not known:
        return Liveness(None, None, status_heartbeat, None, seen, lease_ignored)
    newest = max(known)
    last_heard = min(newest, now)
    return Liveness(
        last_heard=last_heard,
        lease_renewed=lease_renewed,
        status_heartbeat=status_heartbeat,
        stale_for=(now - last_heard).total_seconds(),
        lease_seen=seen,
        lease_ignored=lease_ignored,
        skew_seconds=max(0.0, (newest - now).total_seconds()),
    )


def lease_renewed(node: Mapping[str, Any], lease: Mapping[str, Any] | None) -> datetime | None:
    """``lease``'s ``spec.renewTime`` when it counts for ``node`` (the node's own Lease in
    ``kube-node-lease``, not held by another identity, with a readable time), else None."""
    return None if lease is None else _renewal(node, lease)[0]


def _ready(node: Mapping[str, Any]) -> Mapping[str, Any]:
    for condition in objects.get_list(node, "status", "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition
    return {}


def _renewal(node: Mapping[str, Any], lease: Mapping[str, Any]) -> tuple[datetime | None, str]:
    """The Lease's ``renewTime`` when it counts for ``node``, else None and why not."""
    name = objects.get_str(node, "metadata", "name") or ""
    meta = objects.get_map(lease, "metadata")
    if meta.get("namespace") != NODE_LEASE_NAMESPACE or meta.get("name") != name:
        where = f"{meta.get('namespace') or '?'}/{meta.get('name') or '?'}"
        return None, f"the Lease {where} is not {NODE_LEASE_NAMESPACE}/{name}"
    spec = objects.get_map(lease, "spec")
    holder = spec.get("holderIdentity")
    if holder not in (None, "", name):
        return None, f"the Lease is held by {str(holder)[:200]!r}, not by the node's kubelet"
    renewed = objects.parse_time(spec.get("renewTime"))
    if renewed is None:
        return None, "the Lease has no readable spec.renewTime"
    return renewed, ""
