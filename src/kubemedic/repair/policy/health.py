"""When a node is unhealthy, why, and since when.

A node is **unhealthy** when one of its pool's condition rules has held for the rule's duration
(``Ready`` ``False``/``Unknown`` for 10 minutes by default; node-problem-detector's
``KernelDeadlock``/``ReadonlyFilesystem`` and the node agent's ``KubeletUnhealthy``/
``ContainerRuntimeUnhealthy``). The clock of a rule starts at the condition's
``lastTransitionTime``, as Cluster API's MachineHealthCheck counts ``unhealthyConditions``.

A node that has **never been Ready** is judged by the startup timeout instead (MachineHealthCheck's
``nodeStartupTimeout``): nothing is held against it for that long after its creation; after that,
not being Ready is the trigger.

**Liveness.** The node lifecycle controller turns ``Ready`` to ``Unknown`` when neither the
node's Lease nor its status was renewed within the grace period, so a rule on ``Ready`` sees a
silent node. Where no controller did (a stopped controller manager), a node whose Lease and status
heartbeat are both older than the grace period counts as ``Ready=Unknown`` since it was last
heard from plus the grace period (:mod:`kubemedic.model.liveness`).

**Cause.** What a repair should try first: ``kubelet`` (the agent reports ``KubeletUnhealthy``),
``runtime`` (the agent reports ``ContainerRuntimeUnhealthy``, or the kubelet itself says the
container runtime is down), ``startup`` (never became Ready), else ``node``. A daemon the agent
restarted to its limit (reason ``KubeletRepairFailed``/``ContainerRuntimeRepairFailed``) counts as
``node``: another restart will not help, so the ladder starts at a reboot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kubemedic.model import agentcontract, liveness, timing
from kubemedic.repair.policy.records import Condition, NodeObservation
from kubemedic.repair.policy.settings import ConditionRule, RepairSettings

__all__ = ["Verdict", "agent_reachable", "judge", "not_ready_since", "ready"]

AGENT_READY = "KubemedicAgentReady"
GRACE = timedelta(seconds=liveness.NODE_MONITOR_GRACE_SECONDS)
"""``--node-monitor-grace-period`` (:mod:`kubemedic.model.liveness`)."""

_RUNTIME_DOWN = ("container runtime is down", "container runtime status check", "PLEG is not")
#: How close to its creation a node's first Ready=False may be and still be "never Ready".
_REGISTRATION = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class Verdict:
    """``unhealthy`` with its ``trigger`` (a sentence) and ``cause``; else, when a rule is
    running, ``due``: when it will be unhealthy if nothing changes."""

    unhealthy: bool
    trigger: str = ""
    cause: str = "node"
    since: datetime | None = None
    due: datetime | None = None
    starting: bool = False


def judge(node: NodeObservation, settings: RepairSettings, now: datetime) -> Verdict:
    """The node's health at ``now`` under its pool's rules."""
    pool = next((p for p in settings.pools if p.name == node.pool), None)
    rules = pool.conditions if pool is not None and pool.conditions is not None else None
    rules = rules if rules is not None else settings.conditions
    startup = (
        pool.startup_timeout
        if pool is not None and pool.startup_timeout is not None
        else settings.startup_timeout
    )
    current = ready(node, now)
    if _never_ready(node, current):
        created = node.created or now
        if now < created + startup:
            return Verdict(False, due=created + startup, starting=True)
        return Verdict(
            True,
            trigger=f"not Ready {_human(startup)} after it was created (startup timeout)",
            cause="startup",
            since=created,
        )
    due: datetime | None = None
    fired: tuple[datetime, datetime, ConditionRule, Condition] | None = None
    for rule in rules:
        condition = current if rule.type == "Ready" else node.condition(rule.type)
        if condition is None or not rule.matches(condition.status):
            continue
        since = condition.since or now
        at = since + rule.after
        if now < at:
            due = at if due is None else min(due, at)
        elif fired is None or at < fired[0]:
            # The rule that fired first names the trigger, so it stays the same while the
            # node stays down (a later rule firing too does not change the story).
            fired = (at, since, rule, condition)
    if fired is not None:
        _, since, rule, condition = fired
        return Verdict(
            True, trigger=_trigger(rule, condition), cause=_cause(node, current), since=since
        )
    return Verdict(False, due=due)


def not_ready_since(node: NodeObservation, now: datetime) -> datetime | None:
    """When the node's Ready stopped being True (None while it is Ready)."""
    current = ready(node, now)
    if current is None or current.status == "True":
        return None
    return current.since or node.created or now


def agent_reachable(node: NodeObservation, settings: RepairSettings, now: datetime) -> bool:
    """The node agent runs and can write to the API: its heartbeat is fresh."""
    condition = node.condition(AGENT_READY)
    if condition is None or condition.status != "True":
        return False
    beat = condition.heartbeat or condition.since
    return beat is not None and now - beat <= settings.agent_heartbeat


def ready(node: NodeObservation, now: datetime) -> Condition | None:
    """The Ready condition, read as the node lifecycle controller would: ``Unknown`` once both
    the Lease and the status heartbeat are older than the grace period."""
    ready = node.condition("Ready")
    if ready is None or ready.status != "True":
        return ready
    heard = liveness.judge_times(ready.heartbeat, node.lease_renewed, now)
    if heard.last_heard is None or heard.alive():
        return ready
    last = heard.last_heard
    return Condition(
        type="Ready",
        status="Unknown",
        since=last + GRACE,
        heartbeat=ready.heartbeat,
        reason="NodeStatusUnknown",
        message="Kubelet stopped posting node status (neither its Lease nor its status "
        f"was renewed since {last:%Y-%m-%dT%H:%M:%SZ}).",
    )


def _never_ready(node: NodeObservation, ready: Condition | None) -> bool:
    if ready is None:
        return True
    if ready.status == "True":
        return False
    created, since = node.created, ready.since
    return created is not None and since is not None and since - created <= _REGISTRATION


def _trigger(rule: ConditionRule, condition: Condition) -> str:
    why = f" ({condition.reason})" if condition.reason else ""
    return f"{rule.type}={condition.status} for {_human(rule.after)}{why}"


def _cause(node: NodeObservation, ready: Condition | None) -> str:
    kubelet = node.condition(agentcontract.KUBELET_UNHEALTHY)
    runtime = node.condition(agentcontract.RUNTIME_UNHEALTHY)
    if any(
        c is not None and c.status == "True" and c.reason in agentcontract.GAVE_UP_REASONS
        for c in (kubelet, runtime)
    ):
        return "node"  # the agent restarted it to its limit: a restart will not help
    if runtime is not None and runtime.status == "True":
        return "runtime"
    if kubelet is not None and kubelet.status == "True":
        return "kubelet"
    if (
        ready is not None
        and ready.status == "False"
        and any(words in ready.message for words in _RUNTIME_DOWN)
    ):
        return "runtime"
    return "node"


def _human(delta: timedelta) -> str:
    return timing.human_duration(delta.total_seconds())
