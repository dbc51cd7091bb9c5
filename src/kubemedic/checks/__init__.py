"""Checks: pure functions of a ``ClusterView`` that return ``Finding``s.

Importing this package registers every check in ``registry.REGISTRY``.
"""

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.registry import REGISTRY, run_checks

__all__ = ["REGISTRY", "Finding", "Severity", "run_checks"]
