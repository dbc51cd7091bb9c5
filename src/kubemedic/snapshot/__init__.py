"""Reading a snapshot: ``kubectl get -o json`` output in files or a directory (JSON, YAML, gzip,
Lists and typed lists), with every bad input named by file and field (``loading``).

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = [
    "loading",
]
