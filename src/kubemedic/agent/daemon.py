"""The agent process: checks, self-repair, conditions, requests; one per node.

:class:`Agent` does each thing as one awaitable step, with the time given, so tests drive it
step by step against a fake host and the API emulator; :meth:`Agent.run` loops the steps on the
real clock:

- :meth:`Agent.check` probes one daemon (through :class:`~kubemedic.agent.host.Host`), folds the
  result into the policy's state and carries out the verdict: a self-repair restart
  (``Normal KubemedicAgentRestarted``, or ``Warning KubemedicAgentRestartFailed``), or giving up
  (``Warning KubemedicAgentGivingUp``);
- :meth:`Agent.report` patches the Node's ``status.conditions`` (``KubemedicAgentReady``,
  ``KubeletUnhealthy``, ``ContainerRuntimeUnhealthy``) as field manager ``kubemedic-agent``, a
  strategic merge patch keyed by ``type`` through ``nodes/status``, when a condition changes and
  at least every ``heartbeat``; ``lastTransitionTime`` moves only with ``status``;
- :meth:`Agent.handle` judges the Node's ``kubemedic.io/agent-request`` by the contract
  (:func:`kubemedic.model.agentcontract.judge`: written by ``kubemedic-repair`` alone, an id
  never answered, at most 5 minutes old by the API server's time of the write, at most 3 actions
  an hour), carries it out once and answers with ``kubemedic.io/agent-ack`` and an Event.

The Node is followed with a watch on ``metadata.name=<node>`` (a GET, then a watch from its
resourceVersion; on any error, back-off and again), and every condition patch returns the Node
too, so a request is seen within a second, or at the latest at the next heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemedic.agent import memory as memories
from kubemedic.agent.host import Host, HostError, Probe, UnitStatus
from kubemedic.agent.metrics import AgentMetrics
from kubemedic.agent.policy import Condition, DaemonRules, DaemonState, Verdict, decide, observe
from kubemedic.agent.settings import AgentConfig, rules_of
from kubemedic.kube.api import Api, ApiError, ConnectionLost, NotFound
from kubemedic.kube.backoff import Backoff
from kubemedic.kube.events import NodeEvents
from kubemedic.kube.kinds import NODES
from kubemedic.model import agentcontract as contract
from kubemedic.model.objects import format_time

__all__ = ["Agent"]

LOG = logging.getLogger("kubemedic.agent")

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
#: Writes of an acknowledgement before it is given up (1 + 2 + 4 s apart).
ACK_ATTEMPTS = 4


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Answer:
    """How a request was answered (``state`` as in the ack; "" when it was not looked at)."""

    id: str
    action: str
    state: str
    message: str


class Agent:
    """One node's agent (see the module docstring)."""

    def __init__(
        self,
        *,
        api: Api,
        host: Host,
        node: str,
        config: AgentConfig,
        identity: str = "",
        now: Callable[[], datetime] = _utcnow,
        version: str = "",
    ) -> None:
        self.api = api
        self.host = host
        self.node = node
        self.config = config
        self.now = now
        self.version = version
        self.identity = identity or node
        self.rules: dict[str, DaemonRules] = dict(
            zip(("kubelet", "runtime"), rules_of(config), strict=True)
        )
        self.events = NodeEvents(
            api=api, component=contract.AGENT_MANAGER, identity=self.identity, now=now
        )
        self.metrics = AgentMetrics()
        self.path = Path(config.state_file)
        self.memory = memories.load(self.path)
        if self.memory.problem:
            LOG.warning("%s", self.memory.problem)
        self.started = now()
        self.boot_id = ""
        self.states: dict[str, DaemonState] = dict(self.memory.daemons)
        self.conditions: dict[str, Condition] = {}
        self.checked: dict[str, datetime] = {}
        self.node_body: dict[str, Any] | None = None
        self.seen_request: str | None = None
        self._reported: tuple[tuple[str, str, str], ...] = ()
        self._last_beat: datetime | None = None
        self._wake = asyncio.Event()
        self.alive = now()

    # -- one daemon ---------------------------------------------------------------------------

    async def check(self, daemon: str, now: datetime | None = None) -> Verdict:
        """Probe ``daemon`` (``kubelet`` or ``runtime``) and act on the verdict."""
        now = now or self.now()
        rules = self.rules[daemon]
        if not self.boot_id:
            self.boot_id = await self._boot_id()
        probe = await self._probe(daemon, rules)
        self.metrics.probe(daemon, probe.healthy)
        before = self.states.get(daemon, DaemonState())
        previous = self.conditions.get(daemon)
        state = observe(rules, before, probe, now, boot_id=self.boot_id)
        unit = await self._unit(rules.unit) if state.unhealthy else None
        verdict = decide(rules, state, unit, now, self_repair=self.config.self_repair)
        self.checked[daemon] = now
        if verdict.act == "restart":
            await self._self_restart(rules, verdict)
        elif verdict.act == "give-up":
            await self._event("Warning", contract.GIVING_UP, verdict.reason)
        self.states[daemon] = verdict.state
        self.conditions[daemon] = verdict.condition
        self.metrics.daemon(daemon, verdict.state)
        if (verdict.state.restarts, verdict.state.gave_up, verdict.state.boot_id) != (
            before.restarts,
            before.gave_up,
            before.boot_id,
        ):
            self._remember()
        if verdict.condition != previous:
            self._wake.set()
        return verdict

    async def _probe(self, daemon: str, rules: DaemonRules) -> Probe:
        timeout = rules.timeout.total_seconds()
        call = self.host.probe_kubelet if daemon == "kubelet" else self.host.probe_runtime
        try:
            return await asyncio.wait_for(asyncio.to_thread(call, timeout), timeout + 5)
        except TimeoutError:
            return Probe(False, f"no answer in {timeout:g}s")
        except HostError as error:
            return Probe(False, str(error))

    async def _unit(self, unit: str) -> UnitStatus | None:
        try:
            return await asyncio.to_thread(self.host.unit_status, unit)
        except HostError as error:
            LOG.warning("%s", error)
            return None

    async def _boot_id(self) -> str:
        try:
            return await asyncio.to_thread(self.host.boot_id)
        except HostError as error:
            LOG.warning("%s", error)
            return ""

    async def _self_restart(self, rules: DaemonRules, verdict: Verdict) -> None:
        try:
            await asyncio.to_thread(self.host.restart_unit, rules.unit)
        except HostError as error:
            self.metrics.restart(rules.name, "self-repair", ok=False)
            await self._event(
                "Warning", "KubemedicAgentRestartFailed", f"self-repair: {verdict.reason}: {error}"
            )
            return
        self.metrics.restart(rules.name, "self-repair", ok=True)
        await self._event("Normal", contract.RESTARTED, f"self-repair: {verdict.reason}")

    def _remember(self) -> None:
        self.memory.daemons = dict(self.states)
        try:
            memories.save(self.path, self.memory)
        except OSError as error:
            LOG.warning("%s: cannot write the agent's state: %s", self.path, error)

    # -- conditions ---------------------------------------------------------------------------

    def condition_list(self) -> list[Condition]:
        """What the agent reports now: its heartbeat and each daemon's condition."""
        ready = Condition(
            contract.AGENT_READY,
            "True",
            "KubemedicAgentRunning",
            f"kubemedic agent {self.version} is running".replace("  ", " "),
        )
        out = [ready]
        for daemon, rules in self.rules.items():
            condition = self.conditions.get(daemon)
            if condition is None:
                kind = (
                    contract.KUBELET_UNHEALTHY
                    if daemon == "kubelet"
                    else (contract.RUNTIME_UNHEALTHY)
                )
                condition = Condition(
                    kind,
                    "Unknown",
                    "NotCheckedYet",
                    f"the first check of {rules.unit} is {_seconds(rules.start_delay)} after "
                    "the agent starts",
                )
            out.append(condition)
        return out

    async def report(self, now: datetime | None = None, *, force: bool = False) -> bool:
        """Patch the conditions when one changed or the heartbeat is due; True when written."""
        now = now or self.now()
        conditions = self.condition_list()
        statuses = tuple((c.type, c.status, c.reason) for c in conditions)
        due = self._last_beat is None or now - self._last_beat >= self.config.heartbeat
        if not force and not due and statuses == self._reported:
            return False
        stored = {
            c.get("type"): c
            for c in ((self.node_body or {}).get("status") or {}).get("conditions") or ()
            if isinstance(c, dict)
        }
        stamp = format_time(now)
        body = []
        for condition in conditions:
            old = stored.get(condition.type) or {}
            since = old.get("lastTransitionTime") if old.get("status") == condition.status else None
            body.append(
                {
                    "type": condition.type,
                    "status": condition.status,
                    "reason": condition.reason,
                    "message": condition.message[:1024],
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": since or stamp,
                }
            )
        answer = await self.api.request(
            "PATCH",
            f"/api/v1/nodes/{self.node}/status",
            params={"fieldManager": contract.AGENT_MANAGER},
            body={"status": {"conditions": body}},
            content_type=STRATEGIC,
        )
        if isinstance(answer, dict):
            self.node_body = answer
        self._reported, self._last_beat = statuses, now
        self.metrics.heartbeat(now)
        return True

    # -- requests -----------------------------------------------------------------------------

    async def handle(self, node: dict[str, Any], now: datetime | None = None) -> Answer | None:
        """Judge and carry out the Node's request, once per annotation value."""
        now = now or self.now()
        self.node_body = node
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        text = annotations.get(contract.REQUEST_ANNOTATION)
        ack_id = _ack_id(annotations.get(contract.ACK_ANNOTATION))
        first = self.seen_request is None
        if text is None or text == self.seen_request:
            self.seen_request = text or ""
            return None
        self.seen_request = str(text)
        request = contract.parse_request(str(text))
        if first and request.id and request.id == ack_id:
            return None  # answered before this process started (its ack is on the Node)
        answered = {*self.memory.answered, *([ack_id] if ack_id else [])}
        reason = contract.judge(
            request,
            owners=contract.annotation_owners(node, contract.REQUEST_ANNOTATION),
            answered=answered,
            actions=self.memory.actions,
            now=now,
            written=contract.written_at(
                node, contract.REQUEST_ANNOTATION, contract.CONTROLLER_MANAGER
            ),
        )
        if reason:
            # An ack already on the Node for this id stays: refusing a replay must not
            # overwrite the answer the controller is reading.
            write_ack = not (request.id and request.id == ack_id)
            return await self._refuse(request, reason, now, write_ack=write_ack)
        if request.action == "reboot":
            return await self._reboot(request, now)
        return await self._restart(request, now)

    async def _refuse(
        self, request: contract.Request, reason: str, now: datetime, *, write_ack: bool
    ) -> Answer:
        LOG.warning("refused request %s (%s): %s", request.id, request.action, reason)
        self.metrics.request(request.action or "unknown", "refused")
        self.memory.refuse(request.id)
        self._remember()
        if write_ack:
            await self._ack(request, "refused", reason, now)
        await self._event(
            "Warning",
            contract.REFUSED,
            f"refused request {request.id or '(no id)'} ({request.action or '?'}): {reason}",
        )
        return Answer(request.id, request.action, "refused", reason)

    async def _restart(self, request: contract.Request, now: datetime) -> Answer:
        unit = self.rules["kubelet" if request.action == "restart-kubelet" else "runtime"].unit
        self.memory.answer(request.id, now)
        self._remember()
        try:
            await asyncio.to_thread(self.host.restart_unit, unit)
        except HostError as error:
            self.metrics.request(request.action, "failed")
            await self._ack(request, "failed", str(error), now)
            await self._event(
                "Warning",
                "KubemedicAgentRestartFailed",
                f"request {request.id}: {error}",
            )
            return Answer(request.id, request.action, "failed", str(error))
        message = f"{unit} restarted"
        self.metrics.request(request.action, "done")
        await self._ack(request, "done", message, now)
        await self._event(
            "Normal",
            contract.RESTARTED,
            f"{message} at the request {request.id} of {request.requester or 'the controller'}",
        )
        return Answer(request.id, request.action, "done", message)

    async def _reboot(self, request: contract.Request, now: datetime) -> Answer:
        # The acknowledgement is the last word before the machine goes down: without it the
        # controller could not tell a reboot from a silence, so no ack, no reboot.
        await self._ack(request, "accepted", "rebooting", now)
        self.memory.answer(request.id, now)
        self._remember()
        await self._event(
            "Normal",
            contract.REBOOTING,
            f"rebooting at the request {request.id} of {request.requester or 'the controller'}",
        )
        try:
            await asyncio.to_thread(self.host.reboot)
        except HostError as error:
            self.metrics.request("reboot", "failed")
            await self._ack(request, "failed", str(error), now)
            await self._event("Warning", "KubemedicAgentRebootFailed", str(error))
            return Answer(request.id, request.action, "failed", str(error))
        self.metrics.request("reboot", "accepted")
        return Answer(request.id, request.action, "accepted", "rebooting")

    async def _ack(
        self, request: contract.Request, state: str, message: str, now: datetime
    ) -> None:
        ack = {
            "id": request.id,
            "action": request.action,
            "state": state,
            "at": format_time(now),
            "message": message[:1024],
        }
        patch = {"metadata": {"annotations": {contract.ACK_ANNOTATION: json.dumps(ack)}}}
        for attempt in range(ACK_ATTEMPTS):
            try:
                answer = await self.api.request(
                    "PATCH",
                    f"/api/v1/nodes/{self.node}",
                    params={"fieldManager": contract.AGENT_MANAGER},
                    body=patch,
                    content_type=MERGE,
                )
            except (ApiError, ConnectionLost):
                # The action may be done already: the answer must not be lost to one
                # failed write (a request is never carried out twice, so it is not retried).
                if attempt + 1 == ACK_ATTEMPTS:
                    raise
                await asyncio.sleep(2.0**attempt)
                continue
            if isinstance(answer, dict):
                self.node_body = answer
            return

    async def _event(self, type_: str, reason: str, message: str) -> None:
        try:
            await self.events.record(self.node, reason, message, type_=type_)
        except (ApiError, ConnectionLost) as error:
            self.metrics.api_error("event")
            LOG.warning("cannot record the Event %s: %s (%s)", reason, message, error)

    # -- the loops ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Check, report and follow the Node until cancelled."""
        tasks = [
            asyncio.create_task(self._daemon_loop(name), name=f"agent-{name}")
            for name in self.rules
        ]
        tasks.append(asyncio.create_task(self._report_loop(), name="agent-report"))
        tasks.append(asyncio.create_task(self._node_loop(), name="agent-node"))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _daemon_loop(self, daemon: str) -> None:
        rules = self.rules[daemon]
        await asyncio.sleep(rules.start_delay.total_seconds())
        while True:
            await self.check(daemon)
            self.alive = self.now()
            await asyncio.sleep(rules.period.total_seconds())

    async def _report_loop(self) -> None:
        backoff = Backoff()
        while True:
            try:
                await self.report()
            except (ApiError, ConnectionLost) as error:
                self.metrics.api_error("status")
                LOG.warning("cannot report the conditions of %s: %s", self.node, error)
                await asyncio.sleep(backoff.next_delay(error))
                continue
            if self.node_body is not None:
                await self._handle_safely(self.node_body)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    async def _node_loop(self) -> None:
        backoff = Backoff()
        while True:
            try:
                node = await self.api.request("GET", f"/api/v1/nodes/{self.node}")
                if isinstance(node, dict):
                    await self._handle_safely(node)
                rv = str(((node or {}).get("metadata") or {}).get("resourceVersion") or "")
                async for event in self.api.watch(
                    NODES,
                    resource_version=rv or None,
                    field_selector=f"metadata.name={self.node}",
                ):
                    body = event.get("object")
                    if event.get("type") in ("ADDED", "MODIFIED") and isinstance(body, dict):
                        await self._handle_safely(body)
            except NotFound as error:
                LOG.warning("node %s does not exist (yet)", self.node)
                await asyncio.sleep(backoff.next_delay(error))
            except (ApiError, ConnectionLost) as error:
                self.metrics.api_error("watch")
                LOG.warning("following node %s: %s", self.node, error)
                await asyncio.sleep(backoff.next_delay(error))

    async def _handle_safely(self, node: dict[str, Any]) -> None:
        try:
            await self.handle(node)
        except (ApiError, ConnectionLost) as error:
            # Not answered: forget having seen it, so the next sight of the Node tries again.
            self.seen_request = None if self.seen_request is None else ""
            self.metrics.api_error("request")
            LOG.warning("cannot answer the request on %s: %s", self.node, error)

    def healthy(self, now: datetime | None = None) -> bool:
        """For ``/healthz``: the checks run (the last one within three periods)."""
        now = now or self.now()
        longest = max(r.period + r.timeout for r in self.rules.values())
        if not self.checked:
            return now - self.started <= max(r.start_delay for r in self.rules.values()) + (
                3 * longest
            )
        return now - max(self.checked.values()) <= 3 * longest


def _ack_id(text: object) -> str:
    if not isinstance(text, str):
        return ""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    return str(body.get("id") or "") if isinstance(body, dict) else ""


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g}s"
