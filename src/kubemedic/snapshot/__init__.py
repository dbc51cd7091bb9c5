"""Reading a snapshot: ``kubectl get -o json`` output in files or a directory (JSON, YAML, gzip,
Lists and typed lists), with every bad input named by file and field. ``reading`` finds and
reads the files within limits (regular files only, bounded inflation), ``collecting`` turns
documents into the objects kept and checks their quantities, ``loading`` parses and puts it
together.

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = [
    "collecting",
    "loading",
    "reading",
]
