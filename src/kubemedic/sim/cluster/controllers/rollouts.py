"""The arithmetic of Deployment rollouts (``pkg/controller/deployment/util/deployment_util.go``,
``progress.go``, ``sync.go`` of Kubernetes 1.32), as pure functions over object bodies.

- **Fenceposts** (``ResolveFenceposts``): ``maxSurge`` rounds *up*, ``maxUnavailable`` *down*
  (25% of 1 is a surge of 1 and no unavailability); both zero makes ``maxUnavailable`` 1.
- **Which ReplicaSet is new** (``FindNewReplicaSet``): the oldest whose template equals the
  Deployment's without the ``pod-template-hash`` label (nil and empty maps alike).
- **Annotations**: ``deployment.kubernetes.io/revision`` (max of the old ones + 1; an old
  revision brought back keeps its former numbers in ``revision-history``),
  ``desired-replicas`` and ``max-replicas`` (what proportional scaling reads back), and the
  Deployment's own annotations copied to its new ReplicaSet except the skipped ones.
- **Proportional scaling** (``GetReplicaSetProportion``): each active ReplicaSet changes by
  ``round(size * newMax / oldMax) - size``, larger first, the leftover to the first.
- **Status and conditions** (``calculateStatus``, ``syncRolloutStatus``): counts summed over the
  ReplicaSets' status, ``Available`` against ``replicas - maxUnavailable``, ``Progressing`` with
  the reasons and messages of the real controller, ``ReplicaFailure`` copied from a ReplicaSet.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.controllers.conditions import (
    condition,
    get_condition,
    remove_condition,
    set_condition,
)
from kubemedic.sim.cluster.controllers.podtemplates import (
    TEMPLATE_HASH_LABEL,
    compute_hash,
    controller_ref,
)
from kubemedic.sim.machinery.objects import Obj, clone

__all__ = [
    "DESIRED_REPLICAS", "MAX_REPLICAS", "REVISION", "REVISION_HISTORY", "Sizes", "available_of",
    "calculate_status", "compact", "complete", "condition", "creation_key", "desired_annotation",
    "equal_ignore_hash", "find_active_or_latest", "find_new", "get_condition",
    "has_progress_deadline", "history_to_delete", "is_saturated", "max_revision", "max_surge",
    "max_unavailable", "new_replicaset", "new_rs_new_replicas", "progress", "proportional_sizes",
    "ready_of", "remove_condition", "replicas_annotations_differ", "replicas_of",
    "resolve_fenceposts", "revision_of", "scaled_value", "set_condition", "set_new_annotations",
    "set_replicas_annotations", "set_revision", "status_replicas_of", "strategy", "stuck_requeue"
]  # fmt: skip

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_SKIPPED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
_AVAILABLE = (
    "Available",
    "True",
    "MinimumReplicasAvailable",
    "Deployment has minimum availability.",
)
_UNAVAILABLE = (
    "Available",
    "False",
    "MinimumReplicasUnavailable",
    "Deployment does not have minimum availability.",
)
#: ``maxRevHistoryLengthInChars``.
_HISTORY_CHARS = 2000
_MAX_INT32 = 2**31 - 1


# -- reading ---------------------------------------------------------------------------------


def replicas_of(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (defaulted to 1 by the API server)."""
    return int((obj.get("spec") or {}).get("replicas", 1) or 0)


def _status_int(obj: Mapping[str, Any], key: str) -> int:
    return int((obj.get("status") or {}).get(key) or 0)


def _annotation_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


status_replicas_of = functools.partial(_status_int, key="replicas")
available_of = functools.partial(_status_int, key="availableReplicas")
ready_of = functools.partial(_status_int, key="readyReplicas")
desired_annotation = functools.partial(_annotation_int, key=DESIRED_REPLICAS)


def strategy(d: Mapping[str, Any]) -> str:
    return str(((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate")


def active(rss: Iterable[Obj | None]) -> list[Obj]:
    """``FilterActiveReplicaSets``: ReplicaSets with ``spec.replicas`` above zero."""
    return [rs for rs in rss if rs is not None and replicas_of(rs) > 0]


def creation_key(rs: Mapping[str, Any]) -> tuple[Any, str]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    meta = rs.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    return (created.timestamp() if created is not None else 0.0), str(meta.get("name") or "")


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    value = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return value is not None and int(value) != _MAX_INT32


# -- fenceposts ------------------------------------------------------------------------------


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        return int(text) if text.lstrip("-").isdigit() else 0
    scaled = float(int(text[:-1])) * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def resolve_fenceposts(surge: Any, unavailable: Any, desired: int) -> tuple[int, int]:
    max_surge = scaled_value(surge if surge is not None else 0, desired, round_up=True)
    max_unavailable = scaled_value(
        unavailable if unavailable is not None else 0, desired, round_up=False
    )
    if max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    return max_surge, max_unavailable


def _rolling(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}


def max_surge(d: Mapping[str, Any]) -> int:
    if strategy(d) != "RollingUpdate":
        return 0
    rolling = _rolling(d)
    return resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(d)
    )[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    if strategy(d) != "RollingUpdate" or replicas_of(d) == 0:
        return 0
    rolling = _rolling(d)
    found = resolve_fenceposts(
        rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(d)
    )[1]
    return min(found, replicas_of(d))


# -- new and old ReplicaSets -----------------------------------------------------------------


def _semantic(value: Any) -> Any:
    """Drop nulls and empty maps/lists (``Semantic.DeepEqual`` treats nil and empty alike)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v not in ({}, [])}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _without_hash(template: Mapping[str, Any]) -> Any:
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != TEMPLATE_HASH_LABEL}
    meta["labels"] = labels
    return _semantic({**template, "metadata": meta})


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``EqualIgnoreHash``."""
    return bool(_without_hash(a) == _without_hash(b))


def find_new(d: Mapping[str, Any], rs_list: Iterable[Obj]) -> Obj | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet with the Deployment's template."""
    wanted = _without_hash((d.get("spec") or {}).get("template") or {})
    for rs in sorted(rs_list, key=creation_key):
        if _without_hash((rs.get("spec") or {}).get("template") or {}) == wanted:
            return rs
    return None


def revision_of(rs: Mapping[str, Any]) -> int | None:
    """``Revision``: 0 without the annotation, None when it is not a number."""
    value = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def max_revision(rss: Iterable[Mapping[str, Any]]) -> int:
    return max((r for r in (revision_of(rs) for rs in rss) if r is not None), default=0)


def new_replicaset(d: Mapping[str, Any]) -> Obj:
    """The body of a Deployment's new ReplicaSet (size and annotations set by the caller)."""
    meta, spec = d["metadata"], d["spec"]
    template = clone(spec.get("template") or {})
    collisions = (d.get("status") or {}).get("collisionCount")
    digest = compute_hash(template, int(collisions) if collisions is not None else None)
    labels = {**((template.get("metadata") or {}).get("labels") or {}), TEMPLATE_HASH_LABEL: digest}
    template.setdefault("metadata", {})["labels"] = labels
    selector = clone(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), TEMPLATE_HASH_LABEL: digest}
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{digest}",
            "namespace": meta.get("namespace") or "default",
            "labels": dict(labels),
            "ownerReferences": [controller_ref(d)],
        },
        "spec": {"replicas": 0, "selector": selector, "template": template},
    }
    if spec.get("minReadySeconds"):
        body["spec"]["minReadySeconds"] = spec["minReadySeconds"]
    return body


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: Iterable[Obj], new_rs: Obj) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
    if strategy(d) == "Recreate":
        return replicas_of(d)
    surge = scaled_value(_rolling(d).get("maxSurge", 0), replicas_of(d), round_up=True)
    current = sum(replicas_of(rs) for rs in all_rss)
    most = replicas_of(d) + surge
    if current >= most:
        return replicas_of(new_rs)
    grow = min(most - current, replicas_of(d) - replicas_of(new_rs))
    return replicas_of(new_rs) + grow


# -- annotations -----------------------------------------------------------------------------


def set_replicas_annotations(rs: Obj, desired: int, most: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(most))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_differ(rs: Mapping[str, Any], desired: int, most: int) -> bool:
    annotations = (rs.get("metadata") or {}).get("annotations") or {}
    return bool(
        annotations.get(DESIRED_REPLICAS) != str(desired)
        or annotations.get(MAX_REPLICAS) != str(most)
    )


def set_new_annotations(d: Mapping[str, Any], rs: Obj, revision: str, *, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, raise the revision
    (keeping the former one in the history when it was set), size annotations for a new one."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((d.get("metadata") or {}).get("annotations") or {}).items():
        if key in _SKIPPED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old = annotations.get(REVISION)
    try:
        old_number = int(old) if old is not None else 0
    except ValueError:
        return False
    if old_number < int(revision):
        annotations[REVISION] = revision
        changed = True
        if old is not None:
            history = annotations.get(REVISION_HISTORY, "")
            parts = history.split(",") if history else []
            total = len(history) + len(old) + 1
            while total > _HISTORY_CHARS and parts:
                total -= len(parts.pop(0)) + 1
            if total <= _HISTORY_CHARS:
                annotations[REVISION_HISTORY] = ",".join([*parts, old])
    if not exists:
        changed |= set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + max_surge(d))
    return changed


def set_revision(d: Obj, revision: str) -> bool:
    """``SetDeploymentRevision``."""
    annotations = d["metadata"].setdefault("annotations", {})
    if annotations.get(REVISION) == revision:
        return False
    annotations[REVISION] = revision
    return True


# -- scaling ---------------------------------------------------------------------------------


def find_active_or_latest(new_rs: Obj | None, old: list[Obj]) -> Obj | None:
    """``FindActiveOrLatest``: the one active ReplicaSet, or the newest when none is active,
    or None when several are."""
    if new_rs is None and not old:
        return None
    newest_first = sorted(old, key=creation_key, reverse=True)
    active = [rs for rs in [*newest_first, new_rs] if rs is not None and replicas_of(rs) > 0]
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    return active[0] if len(active) == 1 else None


def is_saturated(d: Mapping[str, Any], rs: Obj | None) -> bool:
    if rs is None:
        return False
    desired = desired_annotation(rs)
    want = replicas_of(d)
    return replicas_of(rs) == want and desired == want and available_of(rs) == want


@dataclass
class Sizes:
    operation: str
    targets: list[tuple[Obj, int]] = field(default_factory=list)


def proportional_sizes(d: Mapping[str, Any], active: list[Obj]) -> Sizes:
    """The proportional part of ``scale`` for a rolling Deployment."""
    allowed = replicas_of(d) + max_surge(d) if replicas_of(d) > 0 else 0
    to_add = allowed - sum(replicas_of(rs) for rs in active)
    if to_add > 0:
        ordered = sorted(active, key=creation_key, reverse=True)
        ordered.sort(key=replicas_of, reverse=True)  # larger first, newer first among equals
        operation = "up"
    elif to_add < 0:
        ordered = sorted(active, key=creation_key)
        ordered.sort(key=replicas_of, reverse=True)  # larger first, older first among equals
        operation = "down"
    else:
        ordered, operation = list(active), ""
    sizes: list[int] = []
    added = 0
    for rs in ordered:
        part = _proportion(rs, d, to_add, added) if to_add else 0
        sizes.append(replicas_of(rs) + part)
        added += part
    if ordered and to_add:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return Sizes(operation, list(zip(ordered, sizes, strict=True)))


def _proportion(rs: Obj, d: Mapping[str, Any], to_add: int, added: int) -> int:
    if replicas_of(rs) == 0 or to_add in (0, added):
        return 0
    allowed = to_add - added
    fraction = _fraction(rs, d)
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Obj, d: Mapping[str, Any]) -> int:
    if replicas_of(d) == 0:
        return -replicas_of(rs)
    most = replicas_of(d) + max_surge(d)
    before = _annotation_int(rs, MAX_REPLICAS)
    if not before:
        before = _status_int(d, "replicas")
        if not before:
            return 0
    size = replicas_of(rs) * most / before
    rounded = math.floor(abs(size) + 0.5) * (1 if size >= 0 else -1)  # math.Round
    return int(rounded) - replicas_of(rs)


# -- status ----------------------------------------------------------------------------------


def compact(status: Mapping[str, Any]) -> Obj:
    """A status as Go serialises it (zero counters and empty lists omitted)."""
    return {k: v for k, v in status.items() if v not in (0, None, [], {})}


def calculate_status(
    d: Mapping[str, Any], all_rss: Iterable[Obj | None], new_rs: Obj | None, now: datetime
) -> Obj:
    """``calculateStatus``."""
    rss = [rs for rs in all_rss if rs is not None]
    available = sum(available_of(rs) for rs in rss)
    unavailable = max(0, sum(replicas_of(rs) for rs in rss) - available)
    old = d.get("status") or {}
    status: Obj = {
        "observedGeneration": int((d.get("metadata") or {}).get("generation") or 0),
        "replicas": sum(status_replicas_of(rs) for rs in rss),
        "updatedReplicas": status_replicas_of(new_rs) if new_rs is not None else 0,
        "readyReplicas": sum(ready_of(rs) for rs in rss),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
        "conditions": [dict(c) for c in old.get("conditions") or ()],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas_of(d) - max_unavailable(d):
        cond = condition(*_AVAILABLE, now)
    else:
        cond = condition(*_UNAVAILABLE, now)
    set_condition(status, cond)
    return compact(status)


def complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """``DeploymentComplete``."""
    want = replicas_of(d)
    generation = int((d.get("metadata") or {}).get("generation") or 0)
    return (
        int(status.get("updatedReplicas") or 0) == want
        and int(status.get("replicas") or 0) == want
        and int(status.get("availableReplicas") or 0) == want
        and int(status.get("observedGeneration") or 0) >= generation
    )


def _progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, ready or available replicas, or fewer old."""
    old = d.get("status") or {}

    def get(status: Mapping[str, Any], key: str) -> int:
        return int(status.get(key) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new, "replicas") - get(new, "updatedReplicas")
    return (
        get(new, "updatedReplicas") > get(old, "updatedReplicas")
        or new_old < old_old
        or get(new, "readyReplicas") > get(old, "readyReplicas")
        or get(new, "availableReplicas") > get(old, "availableReplicas")
    )


def _timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> bool:
    cond = get_condition(status, "Progressing")
    if not has_progress_deadline(d) or cond is None:
        return False
    if cond.get("reason") == "NewReplicaSetAvailable":
        return False
    if cond.get("reason") == "ProgressDeadlineExceeded":
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    deadline = int(d["spec"]["progressDeadlineSeconds"])
    return since is not None and since.timestamp() + deadline < now.timestamp()


def progress(
    d: Mapping[str, Any], all_rss: Sequence[Obj | None], new_rs: Obj | None, now: datetime
) -> Obj:
    """The status ``syncRolloutStatus`` writes: ``calculateStatus`` plus the Progressing
    estimate and the ReplicaFailure condition."""
    status = calculate_status(d, all_rss, new_rs, now)
    if not has_progress_deadline(d):
        remove_condition(status, "Progressing")
    current = get_condition(d.get("status") or {}, "Progressing")
    finished = (
        int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
        and current is not None
        and current.get("reason") == "NewReplicaSetAvailable"
    )
    subject = (
        f'ReplicaSet "{new_rs["metadata"]["name"]}"'
        if new_rs is not None
        else f'Deployment "{d["metadata"]["name"]}"'
    )
    if has_progress_deadline(d) and not finished:
        if complete(d, status):
            reason, message = "NewReplicaSetAvailable", f"{subject} has successfully progressed."
            set_condition(status, condition("Progressing", "True", reason, message, now))
        elif _progressing(d, status):
            message = f"{subject} is progressing."
            cond = condition("Progressing", "True", "ReplicaSetUpdated", message, now)
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, "Progressing")
            set_condition(status, cond)
        elif _timed_out(d, status, now):
            reason, message = "ProgressDeadlineExceeded", f"{subject} has timed out progressing."
            set_condition(status, condition("Progressing", "False", reason, message, now))
    failures = _replica_failures(all_rss, new_rs)
    if failures:
        set_condition(status, failures[0])
    else:
        remove_condition(status, "ReplicaFailure")
    return compact(status)


def _replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[Obj]:
    """``getReplicaFailures``: the new ReplicaSet's failure first, else any old one's."""
    for group in ([new_rs], all_rss):
        found = []
        for rs in group:
            for cond in ((rs or {}).get("status") or {}).get("conditions") or ():
                if cond.get("type") == "ReplicaFailure":
                    since = cond.get("lastTransitionTime")
                    found.append({
                        "type": "ReplicaFailure", "status": cond.get("status"),
                        "lastUpdateTime": since, "lastTransitionTime": since,
                        "reason": cond.get("reason"), "message": cond.get("message"),
                    })  # fmt: skip
        if found:
            return found
    return []


def stuck_requeue(d: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> float | None:
    """``requeueStuckDeployment``: when to recheck a deadline (0.0: now, rate-limited)."""
    current = get_condition(d.get("status") or {}, "Progressing")
    if not has_progress_deadline(d) or current is None:
        return None
    if complete(d, status) or current.get("reason") == "ProgressDeadlineExceeded":
        return None
    since = parse_time(current.get("lastUpdateTime"))
    if since is None:
        return None
    after = since.timestamp() + int(d["spec"]["progressDeadlineSeconds"]) - now.timestamp()
    return 0.0 if after < 1 else after + 1


def history_to_delete(d: Mapping[str, Any], old: list[Obj]) -> list[Obj]:
    """``cleanupDeployment``: old ReplicaSets beyond ``revisionHistoryLimit``, lowest revision
    first, that are scaled to zero and observed so."""
    limit = (d.get("spec") or {}).get("revisionHistoryLimit")
    if limit is None or int(limit) == _MAX_INT32:
        return []
    alive = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
    excess = len(alive) - int(limit)
    if excess <= 0:
        return []
    alive.sort(key=lambda rs: (revision_of(rs) or 0, *creation_key(rs)))
    return [
        rs
        for rs in alive[:excess]
        if status_replicas_of(rs) == 0
        and replicas_of(rs) == 0
        and int(rs["metadata"].get("generation") or 0) <= _status_int(rs, "observedGeneration")
    ]
