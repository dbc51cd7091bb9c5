"""``kubemedic run``: the daemon that records what the cluster says into the archive and scans it
on a schedule (``daemon``: leader election, reflectors, scans; ``recorder``: events, pod
statuses, nodes and metrics into archive rows; ``metrics``: what ``/metrics`` exports). With
``--web`` it serves the dashboard from its own event loop (:mod:`kubemedic.web`).

May import: :mod:`kubemedic.web` (only when the dashboard is asked for), :mod:`kubemedic.kube`,
:mod:`kubemedic.store`, :mod:`kubemedic.incidents`, :mod:`kubemedic.checks`,
:mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the simulator or the command line.
"""

__all__ = [
    "daemon",
    "metrics",
    "recorder",
]
