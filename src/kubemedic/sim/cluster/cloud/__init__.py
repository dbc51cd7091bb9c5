"""The simulated OpenStack cloud: the part of Keystone v3 and Nova v2.1 that openstacksdk uses
to find a server and control its power, mapped onto the infrastructure provider's VMs and the
hosts under the nodes (server id = the uuid in the node's ``spec.providerID``,
``openstack:///<uuid>``).

- :mod:`.identity`: Keystone (version discovery, password and application-credential tokens,
  the service catalog) and the generated credentials;
- :mod:`.servers`: which servers exist, their Nova states and what reboot, stop and start do;
- :mod:`.compute`: Nova's routes (versions, servers, actions, microversion headers);
- :mod:`.clouds`: :class:`Cloud`, which serves both on the API server's port, and the
  ``clouds.yaml`` for it.

Everything runs on the simulation's clock and its seed.

May import: :mod:`kubemedic.sim.cluster.infra`, :mod:`kubemedic.sim.cluster.runtime`,
:mod:`kubemedic.sim.apiserver`, :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`,
:mod:`kubemedic.output.files`; no other component group.
"""

from kubemedic.sim.cluster.cloud.clouds import CLOUD_NAME, AuthMethod, Cloud
from kubemedic.sim.cluster.cloud.identity import Credentials

__all__ = ["CLOUD_NAME", "AuthMethod", "Cloud", "Credentials"]
