"""Node repair: decide which nodes to repair and how, then do it, safely.

Three floors, each importing only those below it (an import-linter contract):

* :mod:`kubemedic.repair.policy` (pure): settings, observations of nodes, the ladder, brakes,
  ledger rules. State in, decisions out, every decision with its reason; no I/O.
* :mod:`kubemedic.repair.providers` and :mod:`kubemedic.repair.executing`: the hands. Providers
  reboot, power and replace machines (OpenStack through openstacksdk, Cluster API, a command,
  the node agent); the executor cordons, drains through the Eviction API, taints, labels and
  writes Events through the Kubernetes API.
* :mod:`kubemedic.repair.controller`: the loop inside ``kubemedic run`` (leader only) that
  observes, asks the policy, carries its decisions out and records them in the ledger.

The operators' contract (annotations, conditions, field managers, permissions) is docs/repair.md.

May import: :mod:`kubemedic.kube`, :mod:`kubemedic.store`, :mod:`kubemedic.config`,
:mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the simulator, the daemon or the command
line.
"""

__all__ = ["policy", "providers"]
