"""The real :class:`~kubemedic.agent.host.Host`: systemd, the CRI, the kubelet and the kernel.

:class:`SystemHost` is what ``kubemedic agent`` runs against on a node. Each call is one bounded
operation, and every failure to carry one out is a :class:`~kubemedic.agent.host.HostError`
(a :class:`CommandError` for a process) naming what ran and why it failed:

- :mod:`.settings`: :class:`SystemSettings`, where each thing is and how long each call may take;
- :mod:`.running`: one child process, started from an argument list (never a shell), killed
  with its process group at its deadline;
- :mod:`.systemd`: ``systemctl show`` and ``systemctl restart``, and the pure reading of
  ``systemctl show``'s output (:func:`~.systemd.parse_show`);
- :mod:`.cri`: the container runtime probe, a gRPC ``RuntimeService/ListPodSandbox`` call on the
  CRI socket (what ``crictl pods`` sends);
- :mod:`.healthz`: the kubelet probe, ``GET /healthz`` on its local port;
- :mod:`.machine`: :class:`SystemHost`, which puts them together with the boot ID and reboot.

docs/agent.md ("Host access") lists what each call runs and what the DaemonSet must mount for it.

May import: :mod:`kubemedic.agent.host`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`,
``grpc``; never the agent's policy or daemon, the simulator or test support.
"""

from kubemedic.agent.system.machine import SystemHost
from kubemedic.agent.system.running import CommandError
from kubemedic.agent.system.settings import SystemSettings, SystemSettingsError

__all__ = ["CommandError", "SystemHost", "SystemSettings", "SystemSettingsError"]
