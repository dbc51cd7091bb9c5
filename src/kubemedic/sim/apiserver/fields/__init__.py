"""Server-side apply and managedFields: field sets, their trees, who owns what, conflicts.

May import: :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other part of the API
server.
"""

from kubemedic.sim.apiserver.fields.applying import apply

__all__ = ["apply"]
