"""kube-scheduler 1.32: the framework's statuses, the filter and score plugins, preemption's dry
run, the scheduling queue and the FailedScheduling grammar.

May import: :mod:`kubemedic.sim.cluster.runtime`, :mod:`kubemedic.sim.apiserver` (types),
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other component group.
"""

from kubemedic.sim.cluster.scheduler.scheduling import Scheduler

__all__ = ["Scheduler"]
