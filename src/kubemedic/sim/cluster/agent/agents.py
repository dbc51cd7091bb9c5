"""kubemedic's node agent, one per node: its conditions, the requests it carries out, and its
optional self-repair.

The agent is its own process on the node's :class:`~kubemedic.sim.cluster.runtime.hosts.Host`
(a systemd unit next to the kubelet), so it keeps reporting while the kubelet is stopped or hung.
Every :data:`CHECK_PERIOD` (10 s) it looks at the host:

- **Down** (powered off, booting) it does nothing; **unreachable** (a network or control-plane
  fault) it cannot write to the API, so its heartbeat goes stale, but self-repair still acts.
- **Conditions** (:mod:`kubemedic.model.agentcontract`): ``KubemedicAgentReady=True``
  (``KubemedicAgentRunning``),
  ``KubeletUnhealthy`` (``True`` with ``KubeletStopped`` or ``KubeletHung``, else ``False``
  ``KubeletHealthy``), ``ContainerRuntimeUnhealthy`` (``True`` with ``ContainerRuntimeHung``, else
  ``False`` ``ContainerRuntimeHealthy``), written by a strategic merge patch of ``nodes/status``
  keyed by ``type`` as field manager ``kubemedic-agent`` when one changes and at least every
  :data:`HEARTBEAT` (30 s; :class:`AgentSettings` ``heartbeat``), each with a new
  ``lastHeartbeatTime`` (``lastTransitionTime`` moves only with ``status``).
- **Requests**: a new ``kubemedic.io/agent-request`` annotation is judged by
  :func:`~kubemedic.model.agentcontract.judge` and answered with ``kubemedic.io/agent-ack``
  (a merge patch of the Node's annotations, ``kubemedic-agent``) and an Event (component
  ``kubemedic-agent``):
  ``restart-kubelet`` / ``restart-runtime`` run ``Host.restart_kubelet`` / ``restart_runtime``
  (ack ``done``, ``Normal KubemedicAgentRestarted``); ``reboot`` acks ``accepted`` and records
  ``Normal KubemedicAgentRebooting`` before ``Host.reboot``; a refusal acks ``refused`` with the
  reason and records ``Warning KubemedicAgentRefused`` (a replay of the id acknowledged on the
  Node keeps that acknowledgement and only records the Event). Requests written while the agent
  could not see the API are judged when it can (so one older than 5 minutes is refused as too
  old).
  The ids answered and the times of actions done live on the node's disk: they survive reboots.
- **Self-repair** (off unless :class:`AgentSettings` ``self_repair``), as GKE's
  ``health-monitor.sh`` does: a daemon failing for ``grace`` is restarted, at most once per
  ``cooldown``, and after ``max_restarts`` restarts in one boot the agent gives up on it
  (``Warning KubemedicAgentGivingUp``) until the next boot. Its restarts record
  ``KubemedicAgentRestarted`` and do not count against the request rate limit.

Settings are per node, chosen by label selector (:meth:`NodeAgents.configure`: scenarios set them
per pool); ``enabled=False`` means no agent on those nodes (nothing reported, nothing done).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from kubemedic.model import agentcontract as contract
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["CHECK_PERIOD", "HEARTBEAT", "AgentSettings", "NodeAgents"]

CHECK_PERIOD = 10.0
HEARTBEAT = 30.0
NODES = "nodes"
_UNITS = {"kubelet": "kubelet.service", "runtime": "containerd.service"}


@dataclass(frozen=True)
class AgentSettings:
    """How the agent runs on a node. ``grace``, ``cooldown`` in cluster seconds."""

    enabled: bool = True
    #: How often the conditions are written when nothing changed (the contract's 30 s; large
    #: benchmarks may stretch it, up to the controller's ``agentHeartbeat`` of 2 minutes).
    heartbeat: float = HEARTBEAT
    self_repair: bool = False
    #: Self-repair: how long a daemon must fail before it is restarted.
    grace: float = 60.0
    #: Self-repair: the least time between two restarts of one daemon.
    cooldown: float = 120.0
    #: Self-repair: restarts of one daemon per boot before the agent gives up on it.
    max_restarts: int = 3


@dataclass(eq=False)
class _Agent:
    """One node's agent: what it last reported and what it keeps on disk."""

    name: str
    settings: AgentSettings
    last_beat: float
    labels: Mapping[str, str] = field(default_factory=dict)
    reported: tuple[tuple[str, str], ...] = ()
    boot_id: str = ""
    seen_request: str = ""
    answered: dict[str, None] = field(default_factory=dict)
    actions: list[datetime] = field(default_factory=list)
    failing_since: dict[str, float] = field(default_factory=dict)
    last_restart: dict[str, float] = field(default_factory=dict)
    restarts: dict[str, int] = field(default_factory=dict)
    gave_up: set[str] = field(default_factory=set)


class NodeAgents:
    """The node agent of every node (see the module docstring)."""

    name = "kubemedic-agent"

    def __init__(self, hosts: Hosts, *, default: AgentSettings | None = None) -> None:
        self.hosts = hosts
        self.default = default or AgentSettings()
        self._rules: list[tuple[dict[str, str], AgentSettings]] = []
        self._agents: dict[str, _Agent] = {}
        self._pending: set[str] = set()
        self._due = False
        self.timer: Timer | None = None
        #: Actions carried out: (node, action, id or "self-repair").
        self.done: list[tuple[str, str, str]] = []

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, contract.AGENT_MANAGER)
        self.recorder = EventRecorder(
            sim, component=contract.AGENT_MANAGER, manager=contract.AGENT_MANAGER
        )
        sim.watch(NODES, self._on_node)
        for node in sim.objects(NODES):
            self._on_node(Change(0, NODES, "ADDED", node, None))
        self.timer = sim.every(CHECK_PERIOD, self._tick, name=self.name)

    def configure(self, selector: Mapping[str, str], settings: AgentSettings) -> None:
        """Use ``settings`` on nodes whose labels include ``selector`` (the last match wins)."""
        self._rules.append((dict(selector), settings))
        for agent in self._agents.values():
            agent.settings = self._settings_for(agent.labels)

    def settings_of(self, node: str) -> AgentSettings | None:
        agent = self._agents.get(node)
        return agent.settings if agent is not None else None

    def _settings_for(self, labels: Mapping[str, str]) -> AgentSettings:
        chosen = self.default
        for selector, settings in self._rules:
            if all(labels.get(k) == v for k, v in selector.items()):
                chosen = settings
        return chosen

    def _tick(self) -> None:
        self._due = True

    # observing ---------------------------------------------------------------------------

    def _on_node(self, change: Change) -> None:
        meta = change.obj["metadata"]
        name = str(meta["name"])
        if change.type == "DELETED":
            self._agents.pop(name, None)
            self._pending.discard(name)
            return
        agent = self._agents.get(name)
        labels = meta.get("labels") or {}
        if agent is None:
            agent = _Agent(name, self.default, self.sim.seconds() - HEARTBEAT)
            self._agents[name] = agent
        if agent.labels != labels:
            agent.labels = dict(labels)
            agent.settings = self._settings_for(agent.labels)
        request = (meta.get("annotations") or {}).get(contract.REQUEST_ANNOTATION)
        if request is not None and request != agent.seen_request:
            self._pending.add(name)

    # acting --------------------------------------------------------------------------------

    def sync(self) -> bool:
        wrote = False
        if self._due:
            self._due = False
            for name in sorted(self._agents):
                wrote |= self._check(self._agents[name])
        if self._pending:
            pending, self._pending = sorted(self._pending), set()
            for name in pending:
                agent = self._agents.get(name)
                host = self.hosts.find(name)
                if agent is not None and host is not None and self._connected(agent, host):
                    wrote |= self._answer(agent, host)
        return wrote

    def _connected(self, agent: _Agent, host: Host) -> bool:
        return agent.settings.enabled and host.up(self.sim.seconds()) and host.reachable

    def _check(self, agent: _Agent) -> bool:
        host = self.hosts.find(agent.name)
        now = self.sim.seconds()
        if host is None or not agent.settings.enabled or not host.up(now):
            return False
        if host.boot_id != agent.boot_id:  # the agent starts with the machine
            agent.boot_id = host.boot_id
            agent.failing_since.clear()
            agent.restarts.clear()
            agent.gave_up.clear()
            agent.reported = ()
        wrote = False
        if agent.settings.self_repair:
            wrote |= self._self_repair(agent, host, now)
        if not host.reachable:
            return wrote
        wrote |= self._report(agent, host, now)
        node = self.sim.get(NODES, "", agent.name)
        request = ((node or {}).get("metadata", {}).get("annotations") or {}).get(
            contract.REQUEST_ANNOTATION
        )
        if request is not None and request != agent.seen_request:
            wrote |= self._answer(agent, host)
        return wrote

    def _report(self, agent: _Agent, host: Host, now: float) -> bool:
        conditions = _conditions(host)
        statuses = tuple((c[0], c[1]) for c in conditions)
        if statuses == agent.reported and now - agent.last_beat < agent.settings.heartbeat:
            return False
        node = self.sim.get(NODES, "", agent.name)
        if node is None:
            return False
        stored = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or ()}
        stamp = rfc3339(self.sim.now())
        body = []
        for type_, status, reason, message in conditions:
            old = stored.get(type_) or {}
            since = old.get("lastTransitionTime") if old.get("status") == status else None
            body.append(
                {
                    "type": type_,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": since or stamp,
                }
            )
        try:
            self.client.patch(
                "v1", "Node", agent.name, {"status": {"conditions": body}}, subresource="status"
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        agent.reported, agent.last_beat = statuses, now
        return True

    def _answer(self, agent: _Agent, host: Host) -> bool:
        """Judge the Node's request annotation and answer it (at most once per annotation)."""
        node = self.sim.get(NODES, "", agent.name)
        if node is None:
            return False
        text = (node["metadata"].get("annotations") or {}).get(contract.REQUEST_ANNOTATION)
        if text is None or text == agent.seen_request:
            return False
        agent.seen_request = text
        request = contract.parse_request(str(text))
        now = self.sim.now()
        reason = contract.judge(
            request,
            owners=contract.annotation_owners(node, contract.REQUEST_ANNOTATION),
            answered=agent.answered,
            actions=agent.actions,
            now=now,
            written=contract.written_at(
                node, contract.REQUEST_ANNOTATION, contract.CONTROLLER_MANAGER
            ),
        )
        if request.id:
            agent.answered[request.id] = None
        what = f"{request.action or 'request'} {request.id or '(no id)'}"
        if reason:
            # A replay of the id acknowledged on the Node leaves that acknowledgement: the
            # controller may be reading it, and the request was answered.
            if not (request.id and request.id == _acked_id(node)):
                self._ack(node, request, "refused", reason)
            self.recorder.event(node, "Warning", contract.REFUSED, f"Refused {what}: {reason}")
            return True
        agent.actions.append(now)
        self.done.append((agent.name, request.action, request.id))
        by = f" (request {request.id} from {request.requester or 'unknown'})"
        if request.action == "reboot":
            self._ack(node, request, "accepted", "rebooting the node")
            self.recorder.event(node, "Normal", contract.REBOOTING, "Rebooting the node" + by)
            host.reboot(self.sim.seconds())
            return True
        daemon = "kubelet" if request.action == "restart-kubelet" else "runtime"
        self._restart(host, daemon)
        message = f"{_UNITS[daemon]} restarted"
        self._ack(node, request, "done", message)
        self.recorder.event(node, "Normal", contract.RESTARTED, message + by)
        return True

    def _ack(self, node: Obj, request: contract.Request, state: str, message: str) -> None:
        ack = {
            "id": request.id,
            "action": request.action,
            "state": state,
            "at": rfc3339(self.sim.now()),
            "message": message,
        }
        patch = {"metadata": {"annotations": {contract.ACK_ANNOTATION: orjson.dumps(ack).decode()}}}
        try:
            self.client.patch("v1", "Node", node["metadata"]["name"], patch, patch_type="merge")
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    # self-repair ----------------------------------------------------------------------------

    def _self_repair(self, agent: _Agent, host: Host, now: float) -> bool:
        settings, wrote = agent.settings, False
        for daemon, failing in (
            ("kubelet", host.kubelet != "running"),
            ("runtime", host.runtime != "running"),
        ):
            if not failing:
                agent.failing_since.pop(daemon, None)
                continue
            since = agent.failing_since.setdefault(daemon, now)
            last = agent.last_restart.get(daemon)
            if now - since < settings.grace or (
                last is not None and now - last < settings.cooldown
            ):
                continue
            node = self.sim.get(NODES, "", agent.name) if host.reachable else None
            if agent.restarts.get(daemon, 0) >= settings.max_restarts:
                if daemon not in agent.gave_up and node is not None:
                    agent.gave_up.add(daemon)
                    message = (
                        f"Self-repair gave up on {_UNITS[daemon]} after "
                        f"{settings.max_restarts} restarts this boot"
                    )
                    self.recorder.event(node, "Warning", contract.GIVING_UP, message)
                    wrote = True
                continue
            self._restart(host, daemon)
            agent.restarts[daemon] = agent.restarts.get(daemon, 0) + 1
            agent.last_restart[daemon] = now
            agent.failing_since.pop(daemon, None)
            self.done.append((agent.name, f"restart-{daemon}", "self-repair"))
            if node is not None:
                message = (
                    f"Self-repair: {_UNITS[daemon]} restarted after failing for {now - since:.0f}s"
                )
                self.recorder.event(node, "Normal", contract.RESTARTED, message)
                wrote = True
        return wrote

    @staticmethod
    def _restart(host: Host, daemon: str) -> None:
        if daemon == "kubelet":
            host.restart_kubelet()
        else:
            host.restart_runtime()


def _acked_id(node: Obj) -> str:
    """The id of the acknowledgement on ``node`` ("" when there is none or it is unreadable)."""
    text = (node["metadata"].get("annotations") or {}).get(contract.ACK_ANNOTATION)
    try:
        body = orjson.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        return ""
    return str(body.get("id") or "") if isinstance(body, dict) else ""


def _conditions(host: Host) -> list[tuple[str, str, str, str]]:
    """The agent's conditions for ``host``: (type, status, reason, message)."""
    out = [(contract.AGENT_READY, "True", "KubemedicAgentRunning", "kubemedic-agent is running")]
    if host.kubelet == "stopped":
        out.append(
            (contract.KUBELET_UNHEALTHY, "True", "KubeletStopped", "kubelet.service is not running")
        )
    elif host.kubelet == "hung":
        out.append(
            (contract.KUBELET_UNHEALTHY, "True", "KubeletHung", "kubelet /healthz does not answer")
        )
    else:
        out.append(
            (contract.KUBELET_UNHEALTHY, "False", "KubeletHealthy", "kubelet /healthz is ok")
        )
    if host.runtime == "hung":
        out.append(
            (
                contract.RUNTIME_UNHEALTHY,
                "True",
                "ContainerRuntimeHung",
                "the container runtime does not answer CRI calls",
            )
        )
    else:
        out.append(
            (
                contract.RUNTIME_UNHEALTHY,
                "False",
                "ContainerRuntimeHealthy",
                "the container runtime answers CRI calls",
            )
        )
    return out
