"""Live cluster access: kubeconfig resolution as kubectl does it, a raw JSON transport over
lightkube's configured client (``api``, with typed status errors), API discovery, reflectors
(list, watch, relist on 410, back-off), compact caches, the probes and ``/metrics`` a process
serves (``endpoints``), the one writer of Events on Nodes, Lease
leader election, the clock kubemedic reads time from, and the one-shot read of a cluster for
``scan`` (``livescan``).

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the
store, the simulator or the command line.
"""

__all__ = [
    "api",
    "backoff",
    "clock",
    "compact",
    "config",
    "discovery",
    "endpoints",
    "events",
    "kinds",
    "leader",
    "livescan",
    "reflector",
]
