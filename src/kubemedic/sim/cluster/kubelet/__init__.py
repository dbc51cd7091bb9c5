"""The kubelets: admission, pod and node status, leases, memory pressure and eviction, OOM kills.

May import: :mod:`kubemedic.sim.cluster.runtime`, :mod:`kubemedic.sim.apiserver` (types),
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other component group.
"""

from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.kubelet.pressure import NodePressure

__all__ = ["Kubelets", "NodePressure"]
