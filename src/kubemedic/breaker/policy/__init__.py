"""The storm breaker's policy: pure functions from observations to explained decisions.

``settings`` (:class:`BreakerSettings`, :class:`BreakerAction`), ``records`` (observations,
predictions, the state kept between rounds, decisions), ``observing`` (a ``ClusterView`` to pod
observations and pinned-node predictions, through the checks' own rules and arithmetic),
``detecting`` (churn per owner over a sliding window, with hysteresis) and ``deciding`` (one
round: ``decide(state, now=..., pods=..., predictions=..., drifts=..., settings=...) -> Plan``).

May import: :mod:`kubemedic.drift.engine` and :mod:`kubemedic.drift.rules` (drift results, their
revert patch), :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; no I/O
(an import-linter contract).
"""

from kubemedic.breaker.policy.deciding import decide, forget_revert, out_of_band, prune_candidates
from kubemedic.breaker.policy.observing import observe, predict
from kubemedic.breaker.policy.records import (
    BreakerState,
    Decision,
    DecisionKind,
    Plan,
    PodObservation,
    Prediction,
    owner_key,
)
from kubemedic.breaker.policy.settings import BreakerAction, BreakerSettings, BreakerSettingsError

__all__ = [
    "BreakerAction",
    "BreakerSettings",
    "BreakerSettingsError",
    "BreakerState",
    "Decision",
    "DecisionKind",
    "Plan",
    "PodObservation",
    "Prediction",
    "decide",
    "forget_revert",
    "observe",
    "out_of_band",
    "owner_key",
    "predict",
    "prune_candidates",
]
