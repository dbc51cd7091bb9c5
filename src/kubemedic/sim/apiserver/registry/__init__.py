"""The registry: how a request becomes stored state and how stored state is read back.

Decoding and unknown fields, defaulting, admission, validation, the writer (create, update,
patch, apply, delete with finalizers and graceful deletion), reading (lists, pages, selectors),
conversion between versions, subresources (status, scale, eviction, binding) and the garbage
collector.

May import: the independent parts of :mod:`kubemedic.sim.apiserver` (fields, patches, tables,
openapi, storage), :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`.
"""

from kubemedic.sim.apiserver.registry.writing import DeleteOptions, WriteOptions, Writer

__all__ = ["DeleteOptions", "WriteOptions", "Writer"]
