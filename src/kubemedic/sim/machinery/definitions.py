"""The official OpenAPI definitions of the built-in types, as the API emulator reads them.

One copy, shared with the product: :mod:`kubemedic.model.schemas` (re-exported here so that every
layer of the simulator keeps naming it from its own machinery).
"""

from kubemedic.model.schemas import (
    KEY_DEFAULTS,
    KUBERNETES_VERSION,
    Definitions,
    NodeKind,
    SchemaNode,
    definitions,
)

__all__ = [
    "KEY_DEFAULTS",
    "KUBERNETES_VERSION",
    "Definitions",
    "NodeKind",
    "SchemaNode",
    "definitions",
]
