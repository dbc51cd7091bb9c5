"""Providers: the hands that reboot, power and replace machines (``base``: the interface and the
entry point group; ``contract``: the annotations, labels, taint and field manager of
docs/repair.md and the one way the repair writes a Node; one module per provider: ``agent``
(and the controller's half of the node agent contract), ``clusterapi``, ``exec``,
``openstack``; ``registry``: the built-in ones by name).

May import: :mod:`kubemedic.repair.policy`, :mod:`kubemedic.kube`, :mod:`kubemedic.model`,
:mod:`kubemedic.errors`, and each provider its own client library (openstacksdk).
"""

__all__ = ["base", "contract", "registry"]
