"""kubemedic's node agent: health checks, self-repair and the controller's requests, on the node.

``kubemedic agent`` runs on every node (a privileged DaemonSet with the host's PID namespace,
systemd and CRI socket). It checks the container runtime and the kubelet as GKE's
``health-monitor.sh`` does, restarts a failing daemon within limits, reports conditions and
Events on its Node, and carries out the repair controller's requests under the contract of
docs/repair.md (:mod:`kubemedic.model.agentcontract`). docs/agent.md is the operator's guide.

- :mod:`.host`: the one typed interface to the host (systemd, CRI, kubelet healthz, reboot, boot
  ID); :mod:`.system` is the real one;
- :mod:`.policy`: pure decisions (when to restart, back off, give up);
- :mod:`.daemon`: the agent process (API, conditions, requests, metrics and health endpoints).

May import: :mod:`kubemedic.kube`, :mod:`kubemedic.config`, :mod:`kubemedic.model`,
:mod:`kubemedic.errors`; never the simulator, the repair controller or test support.
"""

from kubemedic.agent.host import Host, HostError, Probe, UnitStatus

__all__ = ["Host", "HostError", "Probe", "UnitStatus"]
