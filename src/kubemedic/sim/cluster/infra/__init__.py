"""Machines and where they come from: Cluster API (MachineDeployment, MachineSet, Machine), the
infrastructure provider's hooks (reboot, power, delete) and the cluster autoscaler.

May import: :mod:`kubemedic.sim.cluster.runtime`, :mod:`kubemedic.sim.apiserver` (types),
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other component group.
"""

from kubemedic.sim.cluster.infra.autoscaling import Autoscaler
from kubemedic.sim.cluster.infra.clusterapi import ClusterAPI
from kubemedic.sim.cluster.infra.providers import Infrastructure

__all__ = ["Autoscaler", "ClusterAPI", "Infrastructure"]
