"""What the breaker is told: which actions it may take, its thresholds and windows.

Every duration is in seconds of the cluster's clock. The defaults act on nothing: ``dry_run``
is on, and only ``alert`` is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kubemedic.errors import InputError

__all__ = ["BreakerAction", "BreakerSettings", "BreakerSettingsError"]


class BreakerSettingsError(InputError, ValueError):
    """Settings that cannot work (a lower threshold above the upper one, a negative window)."""


class BreakerAction(StrEnum):
    """What the breaker can do; each an Event reason ``KubemedicBreaker<Action>``."""

    ALERT = "alert"
    REVERT_OUT_OF_BAND = "revert-out-of-band"
    SCALE_TO_FIT = "scale-to-fit"
    PRUNE_FAILED = "prune-failed"


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    """The breaker's policy.

    A storm **starts** when an owner has at least ``start_pods`` pods rejected at admission
    created within the last ``window_seconds``; it **ends** once that count has stayed at or below
    ``end_pods`` for ``calm_seconds`` (hysteresis: a storm that flickers stays one storm).
    """

    actions: frozenset[BreakerAction] = frozenset({BreakerAction.ALERT})
    dry_run: bool = True
    window_seconds: float = 120.0
    start_pods: int = 10
    end_pods: int = 2
    calm_seconds: float = 300.0
    #: Loop guard: an owner reverted less than this long ago is not reverted again (alert).
    revert_guard_seconds: float = 3600.0
    #: Which out-of-band fields ``revert-out-of-band`` removes: JSON pointers, each also covering
    #: what lies under it. The template's placement fields by default.
    revert_pointers: tuple[str, ...] = (
        "/spec/template/spec/nodeName",
        "/spec/template/spec/nodeSelector",
        "/spec/template/spec/affinity",
    )
    #: ``prune-failed`` keeps the newest this many Failed pods of an owner (to inspect).
    keep_failed: int = 5
    #: ``prune-failed`` deletes at most this many pods per round (the API server's sake).
    prune_batch: int = 200
    #: Act (not only alert) on a predicted storm, before the first pod fails.
    act_on_prediction: bool = False
    #: More pod ``status.reason`` values to read as admission rejections.
    extra_reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.start_pods < 1:
            raise BreakerSettingsError(f"start_pods {self.start_pods}: expected at least 1")
        if not 0 <= self.end_pods < self.start_pods:
            raise BreakerSettingsError(
                f"end_pods {self.end_pods}: expected from 0 to below start_pods ({self.start_pods})"
            )
        for name in ("window_seconds", "calm_seconds", "revert_guard_seconds"):
            if getattr(self, name) < 0:
                raise BreakerSettingsError(f"{name} {getattr(self, name)}: expected >= 0")
        if self.window_seconds <= 0:
            raise BreakerSettingsError(f"window_seconds {self.window_seconds}: expected > 0")
        if self.keep_failed < 0 or self.prune_batch < 1:
            raise BreakerSettingsError(
                f"keep_failed {self.keep_failed} / prune_batch {self.prune_batch}: "
                "expected keep_failed >= 0 and prune_batch >= 1"
            )

    def enabled(self, action: BreakerAction) -> bool:
        return action in self.actions
