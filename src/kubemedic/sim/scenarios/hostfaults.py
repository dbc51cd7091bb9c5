"""Host faults: what a scenario's ``fault`` action does to a machine, and how it is undone.

A fault is a state of the :class:`~kubemedic.sim.cluster.runtime.hosts.Host` under a node, not a
write to the API: the kubelet acts on it at its next beat, and the control plane sees only what the
kubelet then stops (or keeps) writing, as on a real cluster. :func:`inflict` sets one; :func:`mend`
ends it (a ``fault`` action's ``for``). What each one stands for:

- ``kubelet-stopped``: the kubelet process is down (stopped, crash-looping). No Lease renewals,
  no status: after ``--node-monitor-grace-period`` the node lifecycle controller sets the node's
  conditions ``Unknown`` (``NodeStatusUnknown``, ``Kubelet stopped posting node status.``) and
  taints it ``node.kubernetes.io/unreachable``. Running containers keep running.
- ``kubelet-hung``: the process is alive but its loops are stuck (a deadlock, a hung cgroup or
  disk read): the same outside view. Mending either is what restarting the kubelet does.
- ``runtime-hung``: the container runtime (containerd, CRI-O) stops answering. The kubelet keeps
  posting but reports ``Ready=False`` (``container runtime is down``) and starts nothing.
- ``misconfig-transient`` / ``misconfig-persistent``: the node's configuration is broken (the
  kubelet reports the CNI not ready, ``Ready=False``). A transient one lived in memory or on a
  tmpfs overlay and a reboot clears it; a persistent one was written to disk and survives
  reboots, so only fixing the machine (or replacing it) helps.
- ``unreachable``: a network partition or control-plane fault. The kubelet runs but cannot reach
  the API server: from the API the same as a stopped kubelet, but when the fault ends the node
  returns with its pods, as a zone does after a network outage.
- ``power-off``: the machine is off; mending it powers it on, which boots it for the host's
  ``boot_seconds`` with a new ``bootID``.
- ``recovered``: every fault above cleared at once (the machine powered on if it was off); it
  is not a state of its own, so there is nothing to mend.
"""

from __future__ import annotations

from kubemedic.sim.cluster.runtime.hosts import Host

__all__ = ["inflict", "mend"]

#: The faults :func:`inflict` clears for ``recovered`` (mending a stopped kubelet also ends a
#: hung one, and mending either misconfiguration clears it).
_ALL = ("kubelet-stopped", "runtime-hung", "misconfig-persistent", "unreachable")


def inflict(host: Host, fault: str, now: float) -> None:
    """Set ``fault`` on ``host`` at ``now`` (cluster seconds); an unknown name does nothing."""
    if fault == "kubelet-stopped":
        host.kubelet = "stopped"
    elif fault == "kubelet-hung":
        host.kubelet = "hung"
    elif fault == "runtime-hung":
        host.runtime = "hung"
    elif fault == "misconfig-transient":
        host.misconfig = "transient"
    elif fault == "misconfig-persistent":
        host.misconfig = "persistent"
    elif fault == "unreachable":
        host.reachable = False
    elif fault == "power-off":
        host.power_off()
    elif fault == "recovered":
        for kind in _ALL:
            mend(host, kind, now)
        host.power_on(now)


def mend(host: Host, fault: str, now: float) -> None:
    """End ``fault`` on ``host`` at ``now``: the daemon running again, the misconfiguration
    gone, the network back, or the machine powered on (and booting)."""
    if fault in ("kubelet-stopped", "kubelet-hung"):
        host.kubelet = "running"
    elif fault == "runtime-hung":
        host.runtime = "running"
    elif fault.startswith("misconfig"):
        host.misconfig = ""
    elif fault == "unreachable":
        host.reachable = True
    elif fault == "power-off":
        host.power_on(now)
