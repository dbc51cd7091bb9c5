"""The old name of :mod:`kubemedic.kube.livescan` (one-shot reads of a live cluster)."""

# TODO(reshape): remove after cli/sim imports move (cli/live.py imports this module)
from kubemedic.kube.livescan import DEFAULT_KINDS, LiveSnapshot, fetch

__all__ = ["DEFAULT_KINDS", "LiveSnapshot", "fetch"]
