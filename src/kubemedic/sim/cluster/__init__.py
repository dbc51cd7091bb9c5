"""The simulated cluster: components that act on the API emulator on a virtual clock.

- :mod:`.runtime`: the engine (timers, change listeners, sync passes), the in-process
  :class:`Client` components write through, the hosts they run on, the usage model and the event
  recorders;
- independent component groups, each importing only the runtime: :mod:`.controllers`
  (kube-controller-manager's loops), :mod:`.scheduler`, :mod:`.kubelet`, :mod:`.agent` (kubemedic's
  node agent), :mod:`.infra` (Cluster API, infrastructure provider, autoscaler) and
  :mod:`.metricsserver`;
- :mod:`.cloud`: the simulated OpenStack cloud (Keystone and Nova) over the infrastructure
  provider's VMs and the hosts, served on the API server's port;
- :mod:`.assembly` wires them into a :class:`Cluster`.

Components act through their client, never through the server's writer or store.

May import: :mod:`kubemedic.sim.apiserver`, :mod:`kubemedic.sim.machinery`,
:mod:`kubemedic.model`, :mod:`kubemedic.output.files` (the cloud's ``clouds.yaml``).
"""

from kubemedic.sim.cluster.assembly import COMPONENTS, Cluster, build
from kubemedic.sim.cluster.cloud import CLOUD_NAME, Cloud
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts

__all__ = [
    "CLOUD_NAME",
    "COMPONENTS",
    "Client",
    "Cloud",
    "Cluster",
    "Host",
    "Hosts",
    "Simulation",
    "Timer",
    "build",
]
