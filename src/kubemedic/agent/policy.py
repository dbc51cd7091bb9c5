"""The agent's pure decisions: when a daemon is unhealthy, when to restart it, when to give up.

The timings follow GKE's ``health-monitor.sh``, all configurable (:class:`DaemonRules`):

- **kubelet**: ``GET http://127.0.0.1:10248/healthz`` with a 10 s timeout every 10 s, after a
  120 s start delay ("wait for 2 minutes for kubelet to be functional");
- **container runtime**: the CRI's ``ListPodSandbox`` (``crictl pods``) with a 60 s timeout
  every 10 s, after a 30 s start delay (the script's four initial attempts, 2+4+8+16 s).

A daemon is unhealthy after ``failures`` failed probes in a row (1, as the script). Where the
script then kills the daemon and sleeps, and loops so forever, the agent restarts it only when:

- **it has been up longer than its cooldown** (node-problem-detector's rule): systemd's
  ``InactiveExitTimestamp`` (else ``ActiveEnterTimestamp``) is older than ``cooldown`` (60 s for
  the kubelet, 120 s for the runtime: the script's sleeps), so a daemon still starting is not
  killed again;
- **its back-off has run out**: the n-th restart waits ``cooldown * backoff**(n-1)`` after the
  previous one (at most ``max_backoff``);
- **it was restarted fewer than ``max_restarts`` times** since it was last healthy for
  ``stable``. When the last restart has had its back-off's time to work and the daemon still
  fails, the agent **gives up**: it stops restarting, reports the daemon's
  condition with reason ``KubeletRepairFailed``/``ContainerRuntimeRepairFailed`` and a Warning
  Event, and the repair controller's ladder goes on with a reboot (docs/repair.md). A daemon
  healthy again for ``stable`` (or a new boot) starts the count over.

Everything here takes the state and the time and returns a new state with a verdict and its
reason; :mod:`kubemedic.agent.daemon` carries it out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from kubemedic.agent.host import Probe, UnitStatus
from kubemedic.model import agentcontract, timing

__all__ = [
    "KUBELET",
    "RUNTIME",
    "Condition",
    "DaemonRules",
    "DaemonState",
    "Verdict",
    "backoff_delay",
    "decide",
    "observe",
]

Act = Literal["none", "restart", "give-up"]


@dataclass(frozen=True)
class DaemonRules:
    """How one daemon is checked and repaired (see the module docstring)."""

    name: Literal["kubelet", "runtime"]
    unit: str
    period: timedelta
    timeout: timedelta
    start_delay: timedelta
    failures: int = 1
    cooldown: timedelta = timedelta(minutes=1)
    max_restarts: int = 3
    backoff: float = 2.0
    max_backoff: timedelta = timedelta(minutes=30)
    stable: timedelta = timedelta(minutes=10)


KUBELET = DaemonRules(
    "kubelet",
    "kubelet.service",
    period=timedelta(seconds=10),
    timeout=timedelta(seconds=10),
    start_delay=timedelta(seconds=120),
    cooldown=timedelta(seconds=60),
)
RUNTIME = DaemonRules(
    "runtime",
    "containerd.service",
    period=timedelta(seconds=10),
    timeout=timedelta(seconds=60),
    start_delay=timedelta(seconds=30),
    cooldown=timedelta(seconds=120),
)


@dataclass(frozen=True)
class DaemonState:
    """What the agent knows of one daemon. ``restarts`` are the times of the restarts since it
    was last healthy for ``stable`` (or since the boot ``boot_id``)."""

    failures: int = 0
    failing_since: datetime | None = None
    healthy_since: datetime | None = None
    detail: str = ""
    restarts: tuple[datetime, ...] = ()
    gave_up: bool = False
    boot_id: str = ""

    @property
    def unhealthy(self) -> bool:
        return self.failing_since is not None


@dataclass(frozen=True)
class Condition:
    """The Node condition that reports the daemon (``KubeletUnhealthy``...)."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class Verdict:
    """What to do now, why, and the condition to report."""

    state: DaemonState
    act: Act
    reason: str
    condition: Condition


def observe(
    rules: DaemonRules, state: DaemonState, probe: Probe, now: datetime, *, boot_id: str = ""
) -> DaemonState:
    """Fold one probe into the state. A new ``boot_id`` starts the restart count over."""
    if boot_id and state.boot_id and boot_id != state.boot_id:
        state = DaemonState(boot_id=boot_id)
    elif boot_id and not state.boot_id:
        state = replace(state, boot_id=boot_id)
    if probe.healthy:
        healthy_since = state.healthy_since or now
        stable = now - healthy_since >= rules.stable
        return replace(
            state,
            failures=0,
            failing_since=None,
            healthy_since=healthy_since,
            detail=probe.detail,
            restarts=() if stable else state.restarts,
            gave_up=False if stable else state.gave_up,
        )
    failures = state.failures + 1
    failing = state.failing_since
    if failing is None and failures >= rules.failures:
        failing = now
    return replace(
        state, failures=failures, failing_since=failing, healthy_since=None, detail=probe.detail
    )


def backoff_delay(rules: DaemonRules, restarts: int) -> timedelta:
    """The least time after the ``restarts``-th restart before the next one."""
    if restarts <= 0:
        return timedelta(0)
    seconds = rules.cooldown.total_seconds() * rules.backoff ** (restarts - 1)
    return min(timedelta(seconds=seconds), rules.max_backoff)


def decide(
    rules: DaemonRules,
    state: DaemonState,
    unit: UnitStatus | None,
    now: datetime,
    *,
    self_repair: bool = True,
) -> Verdict:
    """What to do about the daemon now (``unit`` is systemd's view, None when unknown)."""
    if not state.unhealthy:
        return Verdict(state, "none", f"{rules.unit} is healthy", _condition(rules, state, unit))
    if state.gave_up:
        return Verdict(
            state,
            "none",
            f"gave up on {rules.unit} after {len(state.restarts)} restarts",
            _condition(rules, state, unit),
        )
    if len(state.restarts) >= rules.max_restarts:
        wait = backoff_delay(rules, len(state.restarts))
        if state.restarts and now - state.restarts[-1] < wait:
            return Verdict(
                state,
                "none",
                f"restart {len(state.restarts)} of {rules.unit} was "
                f"{_ago(now - state.restarts[-1])} ago: giving it {_ago(wait)} to recover "
                "before giving up",
                _condition(rules, state, unit),
            )
        gave = replace(state, gave_up=True)
        return Verdict(
            gave,
            "give-up",
            f"{rules.unit} is still unhealthy ({state.detail or 'failing'}) after "
            f"{len(state.restarts)} restarts: not restarting it again; the node needs the "
            "next step of the repair ladder (a reboot)",
            _condition(rules, gave, unit),
        )
    condition = _condition(rules, state, unit)
    if not self_repair:
        return Verdict(state, "none", "self-repair is off", condition)
    started = _started(unit)
    if started is not None and now - started < rules.cooldown:
        return Verdict(
            state,
            "none",
            f"{rules.unit} started {_ago(now - started)} ago, less than its cooldown "
            f"{_ago(rules.cooldown)}: not restarting a daemon that is still starting",
            condition,
        )
    if state.restarts:
        wait = backoff_delay(rules, len(state.restarts))
        since = now - state.restarts[-1]
        if since < wait:
            return Verdict(
                state,
                "none",
                f"backing off: restart {len(state.restarts)} of {rules.unit} was "
                f"{_ago(since)} ago, the next waits {_ago(wait)}",
                condition,
            )
    restarted = replace(state, restarts=(*state.restarts, now))
    return Verdict(
        restarted,
        "restart",
        f"{rules.unit} is unhealthy ({state.detail or 'failing'}): restart "
        f"{len(restarted.restarts)} of at most {rules.max_restarts}",
        condition,
    )


def next_check(rules: DaemonRules, started: datetime, last: datetime | None) -> datetime:
    """When the daemon is probed next: ``start_delay`` after the agent started, then every
    ``period``."""
    first = started + rules.start_delay
    if last is None or last < first:
        return first
    return last + rules.period


def _started(unit: UnitStatus | None) -> datetime | None:
    if unit is None:
        return None
    return unit.started_at or unit.active_since


def _condition(rules: DaemonRules, state: DaemonState, unit: UnitStatus | None) -> Condition:
    detail = state.detail or ""
    if rules.name == "kubelet":
        kind = agentcontract.KUBELET_UNHEALTHY
        if not state.unhealthy:
            return Condition(kind, "False", "KubeletHealthy", "kubelet /healthz is ok")
        if state.gave_up:
            return Condition(
                kind,
                "True",
                agentcontract.KUBELET_GAVE_UP,
                f"{rules.unit} still fails ({detail}) after {len(state.restarts)} restarts",
            )
        if unit is not None and not unit.active:
            return Condition(
                kind,
                "True",
                "KubeletStopped",
                f"{rules.unit} is {unit.active_state} ({detail})",
            )
        return Condition(kind, "True", "KubeletHung", f"kubelet /healthz fails: {detail}")
    kind = agentcontract.RUNTIME_UNHEALTHY
    if not state.unhealthy:
        return Condition(kind, "False", "ContainerRuntimeHealthy", "the CRI answers")
    if state.gave_up:
        return Condition(
            kind,
            "True",
            agentcontract.RUNTIME_GAVE_UP,
            f"{rules.unit} still fails ({detail}) after {len(state.restarts)} restarts",
        )
    return Condition(kind, "True", "ContainerRuntimeHung", f"the CRI does not answer: {detail}")


def _ago(delta: timedelta) -> str:
    return timing.human_duration(max(delta.total_seconds(), 0.0))
