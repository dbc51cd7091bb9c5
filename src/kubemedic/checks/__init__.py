"""Checks: pure functions of a ``ClusterView`` that return ``Finding``s.

Importing this package registers every check in ``registry.REGISTRY``, in the order below (the
order ``kubemedic checks`` lists them and the scan runs them).

May import: :mod:`kubemedic.model` and :mod:`kubemedic.errors` only; no I/O (import-linter
holds this).
"""

from kubemedic.checks import (
    burst,
    evicted,
    neighbours,
    notready,
    oom,
    outofband,
    overcommit,
    pinned,
    probes,
    storm,
    underrequested,
    unschedulable,
)
from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.registry import REGISTRY, run_checks

__all__ = [
    "REGISTRY",
    "Finding",
    "Severity",
    "burst",
    "evicted",
    "neighbours",
    "notready",
    "oom",
    "outofband",
    "overcommit",
    "pinned",
    "probes",
    "run_checks",
    "storm",
    "underrequested",
    "unschedulable",
]
