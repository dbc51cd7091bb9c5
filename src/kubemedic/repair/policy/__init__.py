"""The repair policy: pure functions from observed state to explained decisions.

``settings`` (what the policy is told), ``records`` (observations, repairs in flight, the ledger,
decisions, outcomes), ``codec`` (records as the archive's JSON-able dicts, and back),
``observing`` (Kubernetes bodies to observations), ``health`` (when a node is unhealthy, and
why), ``brakes`` (what holds a repair back), ``ladder`` (each step, its verification and its
escalation) and ``deciding`` (one round: ``decide(state, settings) ->
Plan``; ``fold(repair, outcome) -> Repair``).

May import: :mod:`kubemedic.model` and :mod:`kubemedic.errors` only; no I/O (an import-linter
contract).
"""

__all__ = [
    "brakes",
    "codec",
    "deciding",
    "folding",
    "health",
    "ladder",
    "observing",
    "records",
    "settings",
]
