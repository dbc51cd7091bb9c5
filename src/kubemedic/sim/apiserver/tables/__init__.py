"""Server-side printing: the ``Table`` responses ``kubectl get`` prints, column by column.

May import: :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other part of the API
server.
"""

from kubemedic.sim.apiserver.tables.tabulating import table

__all__ = ["table"]
