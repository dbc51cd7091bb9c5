"""kubemedic keeps Kubernetes clusters healthy and remembers what went wrong.

The public surface: read a snapshot, build a view, run the checks, read the findings::

    import kubemedic
    view = kubemedic.load_snapshot("cluster.json").view()
    for finding in kubemedic.run_checks(view):
        print(finding.to_json())
"""

from kubemedic._version import __version__
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
