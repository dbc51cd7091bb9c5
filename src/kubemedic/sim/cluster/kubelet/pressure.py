"""The parts of each kubelet that act on resource usage: OOM kills, memory-pressure eviction and
liveness probes that fail when a container is starved of CPU.

Every ``interval`` (10 s, the eviction manager's monitoring interval) each node whose kubelet is
posting looks at its running containers through the
:class:`~kubemedic.sim.cluster.runtime.usage.UsageModel`:

- **OOM kill**: a working set over the memory limit is killed by the kernel: ``terminated``
  ``OOMKilled``, exit 137, and a ``SystemOOM`` Warning on the node (``System OOM encountered,
  victim process: <comm>, pid: <pid>``, from the kubelet's OOM watcher).
- **Restarts** use the crash-loop back-off of ``kuberuntime_manager.go`` (``flowcontrol.Backoff``):
  the first exit restarts at once; later ones wait ``10s, 20s, 40s ... 5m0s`` from
  ``finishedAt`` in ``waiting`` ``CrashLoopBackOff`` (``back-off 40s restarting failed
  container=<c> pod=<pod>_<ns>(<uid>)``), with a ``BackOff`` Warning at each pod sync (every
  10-15 s); 10 minutes of running resets it. ``restartCount`` grows when the new container
  starts (``Pulled``, ``Created``, ``Started``); ``lastState`` keeps the termination.
- **Memory pressure** (``pkg/kubelet/eviction``): ``memory.available`` is the memory capacity
  less the working sets of containers and system daemons
  (:func:`~kubemedic.sim.cluster.runtime.usage.system_usage`).
  Under the hard threshold (``memory.available<100Mi``) the node reports ``MemoryPressure=True``
  (until clear for the 5-minute transition period), records ``EvictionThresholdMet``
  ``Attempting to reclaim memory`` and evicts one pod per interval, ranked and worded by
  :mod:`~kubemedic.sim.cluster.kubelet.evicting`; critical pods are never chosen.
- **Liveness under CPU starvation**: when the CPU needs exceed the node's allocatable CPU, CFS
  shares it by request (:func:`~kubemedic.sim.cluster.runtime.usage.allocate_cpu`); a container with
  a liveness probe that gets less than it needs (or needs more than its limit) answers too late: an
  ``Unhealthy`` ``Liveness probe failed: <its handler's timeout>`` per period, then after
  ``failureThreshold`` a ``Killing`` ``Container <c> failed liveness probe, will be restarted``;
  the starved process is SIGKILLed at the end of its grace period (``Error``, exit 137) and
  restarts with the back-off above.

A node whose kubelet is not posting does none of this. Pod status goes as the kubelet writes it:
a strategic-merge PATCH of ``status`` (manager ``kubelet``, subresource ``status``) built from
the pod as stored just before, changing only the containers and readiness concerned
(``containerStatuses`` is an atomic list, sent whole). Sidecars count towards usage only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubemedic.model.durations import go_duration
from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.cluster.kubelet import evicting
from kubemedic.sim.cluster.kubelet.nodestatuses import node_ref
from kubemedic.sim.cluster.runtime import usage as usage_model
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.cluster.runtime.usage import (
    STARTUP_SECONDS,
    UsageModel,
    allocate_cpu,
    started_at,
    system_usage,
)
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["MONITORING_INTERVAL", "NodePressure"]

#: The eviction manager's monitoring interval (``evictionMonitoringPeriod``).
MONITORING_INTERVAL = 10.0
#: ``--eviction-pressure-transition-period`` default.
TRANSITION_PERIOD = 300.0
#: Crash-loop back-off: initial and maximum (``MaxContainerBackOff``).
BACKOFF_INITIAL, BACKOFF_MAX = 10.0, 300.0
#: How often a pod in back-off is synced again (``backOffPeriod``, jittered by half).
BACKOFF_RESYNC = 10.0
MIN_GRACE = 2  # minimumGracePeriodInSeconds
ConditionSetter = Callable[[str, str, str, str, str], None]
#: A container instance's owner: (namespace, pod name, pod uid, container name).
Key = tuple[str, str, str, str]
Stats = dict[tuple[str, str], dict[str, int]]


@dataclass
class _Backoff:
    seconds: float
    updated: float


@dataclass
class _Probe:
    container_id: str
    threshold: int
    failures: int = 0
    timer: Timer | None = None


@dataclass
class _NodeState:
    timer: Timer
    dirty: bool = True
    recheck_at: float = 0.0
    pressure: bool = False
    last_met: float = -math.inf
    available: int | None = None


def _bytes(value: Any) -> int:
    with contextlib.suppress(QuantityError):
        return math.ceil(parse_quantity(value).value)
    return 0


def _statuses(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((pod.get("status") or {}).get("containerStatuses") or ())


def _status_of(pod: Mapping[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The container's status entry, with its ``state`` always present."""
    found = next((s for s in _statuses(pod or {}) if s.get("name") == name), None)
    return None if found is None else {**found, "state": found.get("state") or {}}


def _container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or ()
    return next((c for c in containers if c.get("name") == name), {})


def _format_pod(pod: Mapping[str, Any]) -> str:
    """``format.Pod``: ``name_namespace(uid)``."""
    meta = pod["metadata"]
    return f"{meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})"


def _key(pod: Mapping[str, Any], container: str) -> Key:
    meta = pod["metadata"]
    return (str(meta.get("namespace", "")), str(meta["name"]), str(meta.get("uid", "")), container)


class NodePressure:
    """OOM kills, memory-pressure eviction and starved liveness probes on every node."""

    name = "pressure"

    def __init__(
        self,
        hosts: Hosts,
        usage: UsageModel,
        *,
        interval: float = MONITORING_INTERVAL,
        memory_threshold: str = "100Mi",
        transition_period: float = TRANSITION_PERIOD,
        on_condition: ConditionSetter | None = None,
    ) -> None:
        self.hosts = hosts
        self.usage = usage
        self.interval = interval
        self.memory_threshold = memory_threshold
        self.transition_period = transition_period
        self._threshold = _bytes(memory_threshold)
        self._on_condition = on_condition
        self._nodes: dict[str, _NodeState] = {}
        self._pods: dict[str, dict[tuple[str, str], Obj]] = {}
        self._backoff: dict[Key, _Backoff] = {}
        self._exits: dict[Key, tuple[dict[str, Any], float]] = {}
        self._killing: set[Key] = set()
        self._probes: dict[Key, _Probe] = {}
        self._starving: set[Key] = set()
        self._recorders: dict[str, EventRecorder] = {}
        #: Counters for scenarios, benches and tests.
        self.oom_kills = 0
        self.evictions = 0
        self.probe_kills = 0

    # component ---------------------------------------------------------------------------------

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self._client = Client(sim.server, managers.KUBELET)
        if sim.find(UsageModel) is None:
            self.usage.attach(sim)
        for node in sim.objects("nodes"):
            self._add_node(str(node["metadata"]["name"]))
        for pod in sim.objects("pods"):
            self._index(None, pod)
        sim.watch("nodes", self._on_node)
        sim.watch("pods", lambda c: self._index(c.old, None if c.type == "DELETED" else c.obj))

    def sync(self) -> bool:
        return False  # everything happens on the kubelets' timers

    def under_memory_pressure(self, node: str) -> bool:
        """Whether the node reports ``MemoryPressure=True`` (the kubelet then rejects
        BestEffort pods at admission)."""
        state = self._nodes.get(node)
        return state is not None and state.pressure

    def available_memory(self, node: str) -> int | None:
        """``memory.available`` in bytes at the node's last check (None before the first)."""
        state = self._nodes.get(node)
        return state.available if state is not None else None

    def check(self, node: str) -> None:
        """Run the node's check now (scenarios and tests; the timer runs it every interval)."""
        state = self._nodes.get(node)
        if state is not None:
            state.dirty = True
            self._sweep(node)

    # observing ---------------------------------------------------------------------------------

    def _add_node(self, name: str) -> None:
        if name not in self._nodes:
            timer = self.sim.every(self.interval, lambda: self._sweep(name), name="eviction")
            self._nodes[name] = _NodeState(timer)

    def _on_node(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        if change.type == "DELETED":
            state = self._nodes.pop(name, None)
            if state is not None:
                state.timer.cancel()
        elif change.type == "ADDED":
            self._add_node(name)
            for state in self._nodes.values():  # per-node usage may have grown
                state.dirty = True
        elif change.old is not None and name in self._nodes:
            old, new = change.old.get("status") or {}, change.obj.get("status") or {}
            self._nodes[name].dirty |= any(
                old.get(f) != new.get(f) for f in ("capacity", "allocatable")
            )

    def _index(self, old: Obj | None, pod: Obj | None) -> None:
        """Keep the running pods of each node (the kubelet's active pods)."""
        for obj in (old, pod):
            node = str(((obj or {}).get("spec") or {}).get("nodeName") or "")
            if obj is None or not node:
                continue
            meta = obj["metadata"]
            key = (str(meta.get("namespace", "")), str(meta["name"]))
            pods = self._pods.setdefault(node, {})
            if obj is pod and (obj.get("status") or {}).get("phase") == "Running":
                pods[key] = obj
            else:
                pods.pop(key, None)
            state = self._nodes.get(node)
            if state is not None:
                state.dirty = True

    def _current(self, key: Key) -> Obj | None:
        """The stored pod of a container key while it still runs (same uid, phase Running)."""
        pod = self.sim.get("pods", key[0], key[1])
        if pod is None or pod["metadata"].get("uid") != key[2]:
            return None
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    # the check ---------------------------------------------------------------------------------

    def _sweep(self, node_name: str) -> None:
        state = self._nodes.get(node_name)
        now = self.sim.seconds()
        if state is None or not self.hosts.get(node_name).posting(now):
            return
        node = self.sim.get("nodes", "", node_name)
        if node is None or (not state.dirty and now < state.recheck_at):
            return
        # A node is checked in full after a change, and while something on it moves by itself
        # (growth, start-up CPU, pressure, starvation); otherwise its last verdict stands.
        state.dirty = False
        state.recheck_at = math.inf
        stats: Stats = {}
        demands: list[tuple[Key, Obj, int, int, int | None]] = []
        probed = False
        nodes = self.usage.node_count
        for pod_key, pod in list(self._pods.get(node_name, {}).items()):
            used = stats.setdefault(pod_key, {})
            for name, model in self.usage.specs(pod).items():
                started = started_at(pod, name)
                if started is None:
                    continue
                running, key = now - started, _key(pod, name)
                if model.grows:
                    state.recheck_at = now
                if model.startup_cpu is not None and running < STARTUP_SECONDS:
                    state.recheck_at = min(state.recheck_at, started + STARTUP_SECONDS)
                memory = model.memory_at(running_seconds=running, node_count=nodes)
                over = model.memory_limit is not None and memory > model.memory_limit
                if key not in self._killing and over and self._oom_kill(pod, name, node_name):
                    continue
                used[name] = memory
                if key not in self._killing:
                    need = model.cpu_at(running_seconds=running, node_count=nodes)
                    demands.append((key, pod, need, model.cpu_request or 0, model.cpu_limit))
                    probed = probed or "livenessProbe" in _container(pod, name)
        self._memory(node, state, stats, now)
        if probed:
            self._cpu(node, state, demands)

    def _memory(self, node: Obj, state: _NodeState, stats: Stats, now: float) -> None:
        capacity = _bytes(((node.get("status") or {}).get("capacity") or {}).get("memory", 0))
        system, _ = system_usage(node, threshold=self._threshold)
        available = capacity - system - sum(sum(s.values()) for s in stats.values())
        state.available = available
        if available < self._threshold:
            state.last_met = state.recheck_at = now
            if not state.pressure:
                state.pressure = True
                self._set_condition(node, "True")
            self._evict_one(node, stats, available)
        elif state.pressure:
            state.recheck_at = now
            if now - state.last_met >= self.transition_period:
                state.pressure = False
                self._set_condition(node, "False")

    def _cpu(
        self, node: Obj, state: _NodeState, demands: list[tuple[Key, Obj, int, int, int | None]]
    ) -> None:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        try:
            capacity = parse_quantity(allocatable.get("cpu", 0)).milli
        except QuantityError:
            return
        got = allocate_cpu(capacity, [(need, req, lim) for _, _, need, req, lim in demands])
        for (key, pod, need, _, _), share in zip(demands, got, strict=True):
            probe = _container(pod, key[3]).get("livenessProbe")
            if share < need and probe:
                self._starving.add(key)
                state.recheck_at = self.sim.seconds()
                if key not in self._probes:
                    self._start_probe(pod, key, probe)
            else:
                self._starving.discard(key)

    # OOM kills and restarts ----------------------------------------------------------------------

    def _oom_kill(self, pod: Obj, name: str, node: str) -> bool:
        container = _container(pod, name)
        command = container.get("command") or ()
        image = str(container.get("image") or name).split("@")[0].rsplit("/", 1)[-1]
        process = (str(command[0]).rsplit("/", 1)[-1] if command else image.split(":")[0])[:15]
        pid = self.sim.random.randint(1000, 4_000_000)
        if not self._terminate(_key(pod, name), reason="OOMKilled"):
            return False
        self.oom_kills += 1
        message = f"System OOM encountered, victim process: {process}, pid: {pid}"
        self._recorder(node).event(node_ref(node), "Warning", "SystemOOM", message)
        return True

    def _terminate(self, key: Key, *, reason: str) -> bool:
        """The container exited (``exitCode`` 137: SIGKILL); the kubelet syncs the pod next."""
        self._killing.discard(key)
        pod = self._current(key)
        status = _status_of(pod, key[3])
        running = ((status or {}).get("state") or {}).get("running")
        if pod is None or status is None or running is None:
            return False
        terminated = {
            "exitCode": 137,
            "reason": reason,
            "startedAt": running.get("startedAt"),
            "finishedAt": rfc3339(self.sim.now()),
            "containerID": status.get("containerID"),
        }
        changed = {**status, "state": {"terminated": terminated}, "ready": False, "started": False}
        if not self._write(pod, key[3], changed):
            return False
        self._exits[key] = (terminated, self.sim.seconds())
        self.sim.after(1.0, lambda: self._pod_sync(key), name="kubelet pod sync")
        return True

    def _pod_sync(self, key: Key) -> None:
        """The kubelet's sync of a pod with an exited container: back off, or restart it."""
        if key not in self._exits:
            return
        terminated, finished = self._exits[key]
        pod = self._current(key)
        status = _status_of(pod, key[3])
        if pod is None or status is None or status.get("containerID") != terminated["containerID"]:
            del self._exits[key]  # deleted, evicted, or restarted by someone else
            return
        node, now = str(pod["spec"].get("nodeName", "")), self.sim.seconds()
        host = self.hosts.get(node)
        backoff = self._backoff.get(key)
        expired = backoff is None or finished - backoff.updated > 2 * BACKOFF_MAX
        waiting = backoff is not None and not expired and now - finished < backoff.seconds
        if waiting or not host.posting(now) or host.runtime != "running":
            if waiting and backoff is not None:
                self._back_off(pod, key, status, terminated, backoff.seconds)
            delay = BACKOFF_RESYNC * (1 + 0.5 * self.sim.random.random())
            self.sim.after(delay, lambda: self._pod_sync(key), name="kubelet pod sync")
            return
        if backoff is None or expired:
            self._backoff[key] = _Backoff(BACKOFF_INITIAL, now)
        else:
            backoff.seconds, backoff.updated = min(2 * backoff.seconds, BACKOFF_MAX), now
        del self._exits[key]
        self._restart(pod, key, status, terminated)

    def _back_off(
        self, pod: Obj, key: Key, status: dict[str, Any], terminated: Obj, seconds: float
    ) -> None:
        name, where = key[3], _format_pod(pod)
        message = (
            f"back-off {go_duration(round(seconds))} restarting failed container={name} pod={where}"
        )
        waiting = {"reason": "CrashLoopBackOff", "message": message}
        if (status.get("state") or {}).get("waiting") != waiting:
            last = {"terminated": terminated}
            self._write(pod, name, {**status, "state": {"waiting": waiting}, "lastState": last})
        message = f"Back-off restarting failed container {name} in pod {where}"
        self._event(pod, name, "Warning", "BackOff", message)

    def _restart(self, pod: Obj, key: Key, status: dict[str, Any], terminated: Obj) -> None:
        name = key[3]
        runtime = str(terminated.get("containerID") or "containerd://").split("://")[0]
        changed = {
            **status,
            "state": {"running": {"startedAt": rfc3339(self.sim.now())}},
            "lastState": {"terminated": terminated},
            "restartCount": int(status.get("restartCount") or 0) + 1,
            "containerID": f"{runtime}://{self.sim.random.getrandbits(256):064x}",
            "ready": True,
            "started": True,
        }
        if not self._write(pod, name, changed):
            return
        image = _container(pod, name).get("image", "")
        self._event(
            pod, name, "Normal", "Pulled", f'Container image "{image}" already present on machine'
        )
        self._event(pod, name, "Normal", "Created", f"Created container: {name}")
        self._event(pod, name, "Normal", "Started", f"Started container {name}")

    # liveness probes ---------------------------------------------------------------------------

    def _start_probe(self, pod: Obj, key: Key, spec: Obj) -> None:
        """Probe a starving container every ``periodSeconds`` (after ``initialDelaySeconds``)."""
        status = _status_of(pod, key[3]) or {}
        started = started_at(pod, key[3]) or self.sim.seconds()
        period = float(spec.get("periodSeconds") or 10)
        container_id = str(status.get("containerID", ""))
        probe = self._probes[key] = _Probe(container_id, int(spec.get("failureThreshold") or 3))
        delay = started + float(spec.get("initialDelaySeconds") or 0) - self.sim.seconds()
        offset = max(delay, self.sim.random.uniform(0, period))
        probe.timer = self.sim.every(period, lambda: self._probe(key), offset=offset, name="probe")

    def _probe(self, key: Key) -> None:
        probe = self._probes.get(key)
        pod = self._current(key)
        status = _status_of(pod, key[3])
        if probe is None or pod is None or status is None:
            self._stop_probe(key)
            return
        posting = self.hosts.get(str(pod["spec"].get("nodeName", ""))).posting(self.sim.seconds())
        same = status.get("containerID") == probe.container_id and "running" in status["state"]
        if not (posting and same and key in self._starving and key not in self._killing):
            self._stop_probe(key)  # gone, restarted, or in time again: a success resets it
            return
        container = _container(pod, key[3])
        spec = container.get("livenessProbe") or {}
        output = usage_model.starved_probe_output(pod, container, spec)
        self._event(pod, key[3], "Warning", "Unhealthy", f"Liveness probe failed: {output}")
        probe.failures += 1
        if probe.failures < probe.threshold:
            return
        self._stop_probe(key)
        self.probe_kills += 1
        self._killing.add(key)
        message = f"Container {key[3]} failed liveness probe, will be restarted"
        self._event(pod, key[3], "Normal", "Killing", message)
        grace = pod["spec"].get("terminationGracePeriodSeconds")
        grace = max(MIN_GRACE, int(grace if grace is not None else 30))
        self.sim.after(grace, lambda: self._kill(key), name="kill")

    def _kill(self, key: Key) -> None:
        self._terminate(key, reason="Error")  # the grace period is over: SIGKILL

    def _stop_probe(self, key: Key) -> None:
        probe = self._probes.pop(key, None)
        if probe is not None and probe.timer is not None:
            probe.timer.cancel()

    # eviction ----------------------------------------------------------------------------------

    def _evict_one(self, node: Obj, stats: Stats, available: int) -> None:
        """``synchronize`` once a threshold is met: rank the active pods, evict the first."""
        node_name = str(node["metadata"]["name"])
        recorder = self._recorder(node_name)
        message = "Attempting to reclaim memory"
        recorder.event(node_ref(node_name), "Warning", "EvictionThresholdMet", message)
        pods = self._pods.get(node_name, {})
        candidates = [pods[k] for k in stats if k in pods and not evicting.is_critical(pods[k])]

        def stats_of(pod: Mapping[str, Any]) -> dict[str, int]:
            return stats.get(_key(pod, "")[:2], {})

        for pod in evicting.rank_memory_pressure(candidates, stats_of):
            message, annotations = evicting.eviction_message(
                pod, stats_of(pod), threshold=self.memory_threshold, available=available
            )
            if self._evict(dict(pod), message, annotations, node_name):
                return

    def _evict(self, pod: Obj, message: str, annotations: dict[str, str], node: str) -> bool:
        status = evicting.evicted_status(pod, message, now=rfc3339(self.sim.now()))
        if not self._patch(pod, status):
            return False
        self.evictions += 1
        event = evicting.evicted_event(pod, message, annotations, node=node, moment=self.sim.now())
        try:
            self._client.create(event)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
        for status in _statuses(pod):
            if "running" in (status.get("state") or {}):
                name = status["name"]
                self._event(pod, name, "Normal", "Killing", f"Stopping container {name}")
        return True

    # node condition ----------------------------------------------------------------------------

    def _set_condition(self, node: Obj, status: str) -> None:
        name = str(node["metadata"]["name"])
        short = "Insufficient" if status == "True" else "Sufficient"
        reason = f"KubeletHas{short}Memory"
        message = f"kubelet has {short.lower()} memory available"
        setter = self._on_condition or self._kubelets_setter()
        if setter is not None:
            setter(name, "MemoryPressure", status, reason, message)
            return
        # No kubelet core attached: post the condition as its status setter would.
        now = rfc3339(self.sim.now())
        condition = {"type": "MemoryPressure", "status": status, "reason": reason,
                     "message": message, "lastHeartbeatTime": now,
                     "lastTransitionTime": now}  # fmt: skip
        with contextlib.suppress(errors.StatusError):  # a deleted node has nothing to report
            patch = {"status": {"conditions": [condition]}}
            self._client.patch("v1", "Node", name, patch, subresource="status")
            message = f"Node {name} status is now: NodeHas{short}Memory"
            self._recorder(name).event(node_ref(name), "Normal", f"NodeHas{short}Memory", message)

    def _kubelets_setter(self) -> ConditionSetter | None:
        """``Kubelets.set_condition`` of the attached kubelets, found lazily (no import)."""
        for component in self.sim.components:
            setter = getattr(component, "set_condition", None)
            if callable(setter) and component is not self:
                return setter  # type: ignore[no-any-return]
        return None

    # writing -----------------------------------------------------------------------------------

    def _recorder(self, node: str) -> EventRecorder:
        recorder = self._recorders.get(node)
        if recorder is None:
            recorder = EventRecorder(
                self.sim, component="kubelet", host=node, manager=managers.KUBELET
            )
            self._recorders[node] = recorder
        return recorder

    def _event(self, pod: Obj, container: str, type_: str, reason: str, message: str) -> None:
        """An event about one container of a pod (``fieldPath: spec.containers{<name>}``)."""
        node = str(pod["spec"].get("nodeName", ""))
        field_path = f"spec.containers{{{container}}}"
        self._recorder(node).event(pod, type_, reason, message, field_path=field_path)

    def _write(self, pod: Obj, name: str, changed: dict[str, Any]) -> bool:
        """Patch one container's status (and the pod's readiness) onto the stored pod."""
        current = self._current(_key(pod, name))
        if current is None:
            return False
        statuses = [changed if s.get("name") == name else s for s in _statuses(current)]
        unready = [str(s.get("name")) for s in statuses if not s.get("ready")]
        now, ready = rfc3339(self.sim.now()), "False" if unready else "True"
        old = {c.get("type"): c for c in (current.get("status") or {}).get("conditions") or ()}
        conditions = []
        for kind in ("ContainersReady", "Ready"):
            previous = old.get(kind) or {}
            same = previous.get("status") == ready
            conditions.append({
                "type": kind, "status": ready, "lastProbeTime": None,
                "reason": "ContainersNotReady" if unready else None,
                "message": f"containers with unready status: [{' '.join(unready)}]"
                if unready else None,
                "lastTransitionTime": previous.get("lastTransitionTime", now) if same else now,
            })  # fmt: skip
        return self._patch(current, {"containerStatuses": statuses, "conditions": conditions})

    def _patch(self, pod: Obj, status: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        name, namespace = str(meta["name"]), str(meta.get("namespace", ""))
        try:
            patch = {"status": status}
            self._client.patch("v1", "Pod", name, patch, namespace=namespace, subresource="status")
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        return True
