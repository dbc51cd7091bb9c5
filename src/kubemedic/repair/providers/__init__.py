"""Providers: the hands that reboot, power and replace machines (``base``: the interface and the
entry point group; one module per provider).

May import: :mod:`kubemedic.repair.policy`, :mod:`kubemedic.kube`, :mod:`kubemedic.model`,
:mod:`kubemedic.errors`, and each provider its own client library (openstacksdk).
"""

__all__ = ["base"]
