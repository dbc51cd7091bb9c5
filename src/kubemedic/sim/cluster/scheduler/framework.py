"""The scheduling framework's vocabulary (``pkg/scheduler/framework``): a plugin's verdict on a
node (:class:`Status` with its :class:`Code`), how verdicts merge, and the :class:`Diagnosis` of a
cycle that found no node. The filter plugins (:mod:`.filtering`) and what becomes of a pod that
fits nowhere (:mod:`.unschedulable`) both speak it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Code", "Diagnosis", "Status", "merge", "untolerated_taint"]


class Code(enum.IntEnum):
    """Status codes, in the framework's order of precedence when statuses are merged."""

    SUCCESS = 0
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3


@dataclass(frozen=True, slots=True)
class Status:
    """One plugin's (or the merged) verdict on one node."""

    code: Code
    reasons: tuple[str, ...]
    plugin: str = ""

    @property
    def resolvable(self) -> bool:
        """Whether preemption might help (``Unschedulable``, not ``…AndUnresolvable``)."""
        return self.code == Code.UNSCHEDULABLE


@dataclass
class Diagnosis:
    """Why a scheduling cycle found no node (``framework.Diagnosis``).

    ``statuses`` holds the nodes that were filtered; ``absent`` is the status of every other
    node of the snapshot (set when a PreFilter narrowed the candidates, or rejected the pod).
    """

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status | None = None
    prefilter_msg: str = ""
    postfilter_msg: str = ""
    unschedulable_plugins: set[str] = field(default_factory=set)

    def status_of(self, node: str) -> Status | None:
        return self.statuses.get(node, self.absent)


def untolerated_taint(key: str, value: str) -> str:
    """TaintToleration's reason: ``node(s) had untolerated taint {key: value}``; a taint without
    a value prints ``{key: }`` (Go's ``fmt.Sprintf("{%s: %s}", …)``)."""
    return f"node(s) had untolerated taint {{{key}: {value}}}"


def merge(statuses: Iterable[Status]) -> Status | None:
    """``PluginToStatus.Merge``: the highest code and every reason (when all filters ran)."""
    code = Code.SUCCESS
    reasons: list[str] = []
    plugin = ""
    for status in statuses:
        code = max(code, status.code)
        if not plugin:
            plugin = status.plugin
        reasons.extend(status.reasons)
    if code == Code.SUCCESS:
        return None
    return Status(code, tuple(reasons), plugin)
