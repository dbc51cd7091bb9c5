"""kubemedic keeps Kubernetes clusters healthy and remembers what went wrong.

The public surface: read a snapshot, build a view, run the checks, read the findings::

    import kubemedic
    view = kubemedic.load_snapshot("cluster.json").view()
    for finding in kubemedic.run_checks(view):
        print(finding.to_json())

The names below are imported on first use, so that importing a part of kubemedic (the command
line answering ``--version``, say) does not load every check.

May import: everything below it (it re-exports the checks, the model and the snapshot reader,
loaded on first use).
"""

import importlib as _importlib
import typing as _typing

from kubemedic._version import __version__

if _typing.TYPE_CHECKING:
    from kubemedic.checks import REGISTRY as CHECKS
    from kubemedic.checks import Finding, Severity, run_checks
    from kubemedic.model.fieldpaths import FieldPath
    from kubemedic.model.objects import ObjectRef
    from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
    from kubemedic.model.view import ClusterView
    from kubemedic.snapshot.loading import LoadedSnapshot, SnapshotError, load_snapshot

__all__ = [
    "CHECKS",
    "ClusterView",
    "FieldPath",
    "Finding",
    "LoadedSnapshot",
    "ObjectRef",
    "Quantity",
    "QuantityError",
    "Severity",
    "SnapshotError",
    "__version__",
    "load_snapshot",
    "parse_quantity",
    "run_checks",
]

#: public name -> (module, name in that module)
_LAZY = {
    "CHECKS": ("kubemedic.checks", "REGISTRY"),
    "ClusterView": ("kubemedic.model.view", "ClusterView"),
    "FieldPath": ("kubemedic.model.fieldpaths", "FieldPath"),
    "Finding": ("kubemedic.checks", "Finding"),
    "LoadedSnapshot": ("kubemedic.snapshot.loading", "LoadedSnapshot"),
    "ObjectRef": ("kubemedic.model.objects", "ObjectRef"),
    "Quantity": ("kubemedic.model.quantities", "Quantity"),
    "QuantityError": ("kubemedic.model.quantities", "QuantityError"),
    "Severity": ("kubemedic.checks", "Severity"),
    "SnapshotError": ("kubemedic.snapshot.loading", "SnapshotError"),
    "load_snapshot": ("kubemedic.snapshot.loading", "load_snapshot"),
    "parse_quantity": ("kubemedic.model.quantities", "parse_quantity"),
    "run_checks": ("kubemedic.checks", "run_checks"),
}


def __getattr__(name: str) -> object:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'kubemedic' has no attribute {name!r}") from None
    value = getattr(_importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
