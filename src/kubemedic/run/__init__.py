"""``kubemedic run``: the daemon that records what the cluster says into the archive and scans it
on a schedule (``daemon``: leader election, reflectors, scans; ``recorder``: events, pod
statuses, nodes and metrics into archive rows; ``metrics``: what ``/metrics`` exports).

May import: :mod:`kubemedic.kube`, :mod:`kubemedic.store`, :mod:`kubemedic.incidents`,
:mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the simulator
or the command line.
"""

__all__ = [
    "daemon",
    "metrics",
    "recorder",
]
