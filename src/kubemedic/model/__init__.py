"""Pure model of Kubernetes objects: what every other layer reads objects through.

Quantities and resources, field paths and managedFields, the API server's defaults
(``defaults``) and the official type definitions that say which lists are keyed by what
(``schemas``), owners and placement (node affinity, taints), scheduling messages, events and
evictions as the kubelet words them, node liveness (the Lease and the status heartbeat, as the
node lifecycle controller reads them), durations and times (one parser, one kubectl-style age),
the node agent's contract with the repair controller (names, requests and the rule for carrying
one out), names and label selectors (the one parser), the ``ClusterView`` the checks read, and a
file's type in words from a ``stat`` mode (``filemodes``, for the readers and writers of files
that refuse a pipe or a device). No I/O: nothing here reads a user's file, a socket or a clock;
``schemas`` reads the definitions shipped in the kubernetes-validate package once per process,
data of the program like a table in code.

May import: :mod:`kubemedic.errors` only (import-linter holds this).
"""

__all__ = [
    "agentcontract",
    "containers",
    "defaults",
    "durations",
    "events",
    "eviction",
    "fieldpaths",
    "filemodes",
    "liveness",
    "managedfields",
    "names",
    "objects",
    "owners",
    "placement",
    "quantities",
    "resources",
    "scheduling",
    "schemas",
    "selectors",
    "timing",
    "view",
]
