"""The kubelet of every node: registration, heartbeats, pod admission and pod lifecycle.

:class:`Kubelets` runs a kubelet per Node on the virtual clock, writing what the real kubelet
(Kubernetes 1.32) writes, as field manager ``kubelet``:

- **Registration**: :meth:`Kubelets.register` creates the Node once its host is up (default
  labels; the taints given, as ``--register-with-taints``: ``not-ready`` is the node lifecycle
  controller's); Ready stays ``False`` until the CNI is up. Stored Nodes are adopted silently.
- **Heartbeats** (``pkg/kubelet/nodelease``, ``kubelet_node_status.go``): the Lease is renewed
  every 10 s; status is checked every 10 s and PATCHed when it changed or every 5 minutes.
- **Pods**: bound pods are admitted oldest first (:mod:`~kubemedic.sim.cluster.kubelet.admission`);
  rejected ones fail with a Warning event; admitted ones show ``ContainerCreating`` and run after
  a seeded delay (``Pulling``, ``Pulled``, ``Created``, ``Started``). Status writes are strategic
  merge PATCHes built from the stored pod (:mod:`~kubemedic.sim.cluster.kubelet.podstatuses`), so
  what other kubelet parts write (restarts, OOM kills) survives.
- **Graceful deletion** (the emulator's stand-in is off): ``Killing``, containers stopped within
  the grace period, the terminal status, a delete with grace 0 and a uid precondition. Pods of a
  kubelet that cannot post stay ``Terminating``.
- **Host faults** (:mod:`~kubemedic.sim.cluster.runtime.hosts`): a stopped, hung, unreachable or
  powered-off kubelet writes nothing; a hung runtime makes Ready ``False`` and new pods wait with
  ``FailedCreatePodSandBox``; misconfiguration reports the CNI not ready. After a reboot the new
  ``bootID`` is reported (``Rebooted``) and every container restarts (``SandboxChanged``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.cluster.kubelet import admission as kubeletadmission
from kubemedic.sim.cluster.kubelet import nodestatuses, podstatuses
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339, rfc3339_micro
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone, key_of

__all__ = ["Kubelets"]

LEASES = "leases.coordination.k8s.io"
RENEW_INTERVAL = 10.0  # leaseDuration * renewIntervalFraction (0.25)
STATUS_UPDATE = 10.0  # nodeStatusUpdateFrequency
STATUS_REPORT = 300.0  # nodeStatusReportFrequency
SYNC_RETRY = 10.0  # the pod worker's back-off after a failed sync
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure")
Range = tuple[float, float]


@dataclass(eq=False)
class _Pod:
    """The kubelet's record of one admitted pod (its pod worker)."""

    uid: str
    key: Key
    stage: str  # pending | running | restarting | stopping
    usage: tuple[dict[str, int], frozenset[kubeletadmission.Port]] | None = None
    timer: Timer | None = None
    ip: str = ""
    pulls: dict[str, float] = field(default_factory=dict)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(eq=False)
class _Node:
    """One kubelet's memory: what it admitted, what it last reported, its timers."""

    name: str
    host: Host
    index: int
    recorder: EventRecorder
    pods: dict[str, _Pod] = field(default_factory=dict)
    registered: bool = False
    template: Obj | None = None
    sig: tuple[str, int] = ("", 0)  # (bootID, kubelet restarts) of the process last seen
    down: bool = False
    posting: bool = False
    last_alive: float = 0.0
    down_at: float = 0.0  # when the kubelet was last seen before it started again
    last_report: float = 0.0
    hung_since: float | None = None
    network_at: float = 0.0
    overrides: dict[str, nodestatuses.Condition] = field(default_factory=dict)
    images: set[str] = field(default_factory=set)
    ips: set[str] = field(default_factory=set)
    next_ip: int = 2
    host_ip: str = ""
    timers: list[Timer] = field(default_factory=list)


class Kubelets:
    """Every node's kubelet. Delays are seeded draws of cluster seconds: admission to running,
    an image pull, stopping containers (at most the grace period), the CNI coming up."""

    name = "kubelets"

    def __init__(
        self,
        hosts: Hosts,
        *,
        start_seconds: Range = (1.0, 4.0),
        pull_seconds: Range = (0.5, 3.0),
        stop_seconds: Range = (0.5, 3.0),
        network_seconds: Range = (5.0, 15.0),
    ) -> None:
        self.hosts = hosts
        self.start_seconds = start_seconds
        self.pull_seconds = pull_seconds
        self.stop_seconds = stop_seconds
        self.network_seconds = network_seconds
        self._nodes: dict[str, _Node] = {}
        self._by_node: dict[str, set[Key]] = {}
        self._pod_node: dict[Key, str] = {}
        self._dirty: set[Key] = set()
        self._status_dirty: set[str] = set()

    # interface ------------------------------------------------------------------------------

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, managers.KUBELET)
        sim.kubelets_attached()
        sim.watch("nodes", self._on_node)
        sim.watch("pods", self._on_pod)
        for node in sim.objects("nodes"):
            self._adopt(node)
        for pod in sim.objects("pods"):
            self._index(pod)

    def register(self, node: Obj) -> None:
        """Start the kubelet of a new machine: it creates ``node`` (labels, taints, capacity
        and allocatable as given) at its first status check with the host up."""
        name = str(node["metadata"]["name"])
        state = self._nodes.get(name) or self._new_state(name)
        state.template, state.registered = clone(node), False

    def set_condition(
        self, node_name: str, type_: str, status: str, reason: str, message: str
    ) -> None:
        """Set a node condition the kubelet reports (the eviction manager's pressure
        conditions); it is posted at once when it changes the node's status, and pressure
        conditions that are ``True`` take part in admission."""
        state = self._nodes.get(node_name)
        if state is not None and type_ != "Ready":
            state.overrides[type_] = nodestatuses.Condition(type_, status, reason, message)
            self._status_dirty.add(node_name)

    def running_pods(self, node_name: str) -> list[Obj]:
        """The stored pods whose containers run on the node: phase Running, and not waiting
        for their restart after a reboot."""
        mine = self._nodes[node_name].pods if node_name in self._nodes else {}
        pods = [self.sim.get("pods", *key) for key in self._by_node.get(node_name, ())]
        return sorted(
            (p for p in pods
            if p is not None and (p.get("status") or {}).get("phase") == "Running"
            and getattr(mine.get(p["metadata"]["uid"]), "stage", "") != "restarting"),
            key=key_of,
        )  # fmt: skip

    def sync(self) -> bool:
        wrote = False
        if self._dirty:
            dirty, self._dirty = self._dirty, set()
            now = self.sim.seconds()
            waiting: dict[str, list[Obj]] = {}
            for key in sorted(dirty):
                pod = self.sim.get("pods", *key)
                state = self._nodes.get(self._pod_node.get(key, ""))
                if pod is not None and state is not None and self._observe(state, now):
                    wrote |= self._reconcile(state, pod, waiting)
            for name, pods in waiting.items():  # HandlePodAdditions: oldest first
                for pod in sorted(
                    pods, key=lambda p: (p["metadata"]["creationTimestamp"], key_of(p))
                ):
                    wrote |= self._admit(self._nodes[name], pod)
        for state in [self._nodes[n] for n in sorted(self._status_dirty) if n in self._nodes]:
            if state.registered and self._observe(state, self.sim.seconds()):
                wrote |= self._post_status(state)
        self._status_dirty.clear()
        return wrote

    # observing ------------------------------------------------------------------------------

    def _on_node(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        if change.type == "ADDED":
            self._adopt(change.obj)
        elif change.type == "DELETED" and (state := self._nodes.pop(name, None)) is not None:
            for timer in [*state.timers, *(p.timer for p in state.pods.values() if p.timer)]:
                timer.cancel()

    def _on_pod(self, change: Change) -> None:
        if change.type != "DELETED":
            self._index(change.obj)
            return
        key = key_of(change.obj)
        node = self._pod_node.pop(key, None)
        self._dirty.discard(key)
        if node is not None:
            self._by_node.get(node, set()).discard(key)
            if (state := self._nodes.get(node)) is not None:
                self._forget(state, str(change.obj["metadata"]["uid"]))

    def _index(self, pod: Obj) -> None:
        if node := (pod.get("spec") or {}).get("nodeName"):  # set once, never changed
            self._pod_node[key := key_of(pod)] = node
            self._by_node.setdefault(node, set()).add(key)
            self._dirty.add(key)

    def _observe(self, state: _Node, now: float) -> bool:
        """Whether the node's kubelet can post now; notices restarts, reboots and faults."""
        host = state.host
        if host.runtime != "hung":
            state.hung_since = None
        elif state.hung_since is None:
            state.hung_since = now
        alive = host.up(now) and host.kubelet == "running"
        state.down |= not alive
        if not (alive and host.reachable):
            state.posting = False
            return False
        seen, state.last_alive = state.last_alive, now
        sig = (host.boot_id, host.kubelet_restarts)
        if state.registered and (state.down or sig != state.sig):
            state.down_at = seen
            rebooted = sig[0] != state.sig[0]
            state.sig, state.down, state.posting = sig, False, True
            self._on_start(state, rebooted=rebooted)
        elif not state.posting:  # reachable again: catch up on what happened meanwhile
            state.posting = True
            self._dirty.update(self._by_node.get(state.name, ()))
            self._status_dirty.add(state.name)
        return True

    # nodes ----------------------------------------------------------------------------------

    def _new_state(self, name: str) -> _Node:
        host = self.hosts.get(name)
        recorder = EventRecorder(
            self.sim, component=managers.KUBELET, host=name, manager=managers.KUBELET
        )
        index = max((n.index for n in self._nodes.values()), default=-1) + 1
        state = _Node(name, host, index, recorder)
        state.host_ip = f"10.0.{state.index // 250}.{state.index % 250 + 4}"
        state.sig = (host.boot_id, host.kubelet_restarts)
        state.timers = [
            self.sim.every(RENEW_INTERVAL, lambda: self._tick(state, lease=True), name=name),
            self.sim.every(STATUS_UPDATE, lambda: self._tick(state, lease=False), name=name),
        ]
        self._nodes[name] = state
        return state

    def _adopt(self, node: Obj) -> None:
        """A Node found in the store: its kubelet has been running all along."""
        name = str(node["metadata"]["name"])
        if (state := self._nodes.get(name)) is not None:
            state.registered = True
            return
        stored_boot = ((node.get("status") or {}).get("nodeInfo") or {}).get("bootID")
        if stored_boot and self.hosts.get(name).reboots == 0:
            self.hosts.get(name).boot_id = stored_boot  # the host as the node last reported it
        state = self._new_state(name)
        state.host_ip = nodestatuses.internal_ip(node) or state.host_ip
        now = self.sim.seconds()
        state.registered, state.posting = True, state.host.posting(now)
        state.down = not state.posting
        state.last_report = now - self.sim.random.uniform(0, STATUS_REPORT)
        self._dirty.update(self._by_node.get(name, ()))

    def _on_start(self, state: _Node, *, rebooted: bool) -> None:
        """A kubelet process starting on a registered node, after a restart or a reboot. After
        a reboot every container is gone: running pods get a new sandbox and restart."""
        now = self.sim.seconds()
        self._startup_events(state)
        if rebooted:
            state.network_at = now + self._draw(self.network_seconds)
        keys = sorted(self._by_node.get(state.name, ()))
        for pod in filter(None, (self.sim.get("pods", *key) for key in keys)):
            mine = state.pods.get(pod["metadata"]["uid"])
            running = (pod.get("status") or {}).get("phase") == "Running"
            if rebooted and running and not pod["metadata"].get("deletionTimestamp"):
                mine = mine or self._remember(state, pod, "running")
                mine.stage = "restarting"
                state.recorder.event(pod, "Normal", "SandboxChanged", podstatuses.SANDBOX_CHANGED)
                self._schedule_start(state, mine, max(0.0, state.network_at - now))
            elif mine is not None and (rebooted or mine.timer is None):
                mine.cancel()  # re-examined below, as the new process lists its pods
            self._dirty.add(key_of(pod))
        self._post_status(state, force=True)
        self._renew(state)

    def _startup_events(self, state: _Node) -> None:
        pressure = self._desired(state, self.sim.seconds())[: len(PRESSURES)]
        for reason, message in nodestatuses.startup_events(state.name, pressure):
            state.recorder.event(nodestatuses.node_ref(state.name), "Normal", reason, message)

    def _register(self, state: _Node, template: Obj, now: float) -> None:
        state.host_ip = nodestatuses.internal_ip(template) or state.host_ip
        state.network_at = now + self._draw(self.network_seconds)
        body = nodestatuses.initial_node(
            template,
            host_ip=state.host_ip,
            boot_id=state.host.boot_id,
            pressure=self._desired(state, now)[: len(PRESSURES)],
            network=self._network(state),
            stamp=self._stamp(),
        )
        try:
            self.client.create(body)
        except errors.StatusError as exc:
            if exc.code != 409:  # a Node of that name exists: the kubelet takes it over
                raise
        state.registered, state.template, state.last_report = True, None, now
        state.sig = (state.host.boot_id, state.host.kubelet_restarts)
        state.down, state.posting = False, True
        self._startup_events(state)
        self._renew(state)

    def _tick(self, state: _Node, *, lease: bool) -> None:
        """A heartbeat: the lease renewal, or the status check (which registers the node first
        when the kubelet has not yet)."""
        now = self.sim.seconds()
        if state.template is not None:
            if not lease and state.host.posting(now):
                self._register(state, state.template, now)
        elif state.registered and self._observe(state, now):
            self._renew(state) if lease else self._post_status(state)

    def _renew(self, state: _Node) -> None:
        """Renew the node Lease (an update of the stored object), or create it."""
        stamp = rfc3339_micro(self.sim.now())
        stored = self.sim.get(LEASES, nodestatuses.LEASE_NAMESPACE, state.name)
        if stored is not None:
            self.client.update(nodestatuses.renewed(stored, stamp=stamp))
            return
        node = self.sim.get("nodes", "", state.name)
        uid = node["metadata"]["uid"] if node is not None else None
        self.client.create(nodestatuses.lease(state.name, node_uid=uid, stamp=stamp))

    def _network(self, state: _Node) -> list[str]:
        down = state.host.misconfig or self.sim.seconds() < state.network_at
        return [nodestatuses.network_not_ready()] if down else []

    def _desired(self, state: _Node, now: float) -> list[nodestatuses.Condition]:
        hung = None if state.hung_since is None else now - state.hung_since
        return nodestatuses.desired(state.overrides, hung_for=hung, network=self._network(state))

    def _post_status(self, state: _Node, *, force: bool = False) -> bool:
        """``tryUpdateNodeStatus``: patch when something changed, when forced (a kubelet
        start), or when the 5-minute report is due."""
        stored = self.sim.get("nodes", "", state.name)
        if stored is None:
            return False
        now = self.sim.seconds()
        desired = self._desired(state, now)
        boot_id = state.host.boot_id
        due = now - state.last_report >= STATUS_REPORT
        if not (force or due or nodestatuses.changed(stored, desired, boot_id)):
            return False
        stamp = self._stamp()
        patch, events = nodestatuses.status_patch(stored, desired, stamp=stamp, boot_id=boot_id)
        self.client.patch("v1", "Node", state.name, patch, subresource="status")
        state.last_report = now
        for type_, reason, message in events:
            state.recorder.event(nodestatuses.node_ref(state.name), type_, reason, message)
        return True

    # pods -----------------------------------------------------------------------------------

    def _remember(self, state: _Node, pod: Obj, stage: str) -> _Pod:
        ip = str((pod.get("status") or {}).get("podIP") or "")
        mine = _Pod(str(pod["metadata"]["uid"]), key_of(pod), stage, ip=ip)
        state.pods[mine.uid] = mine
        state.ips.add(mine.ip)
        return mine

    def _forget(self, state: _Node, uid: str) -> None:
        if (mine := state.pods.pop(uid, None)) is not None:
            mine.cancel()
            state.ips.discard(mine.ip)

    def _reconcile(self, state: _Node, pod: Obj, waiting: dict[str, list[Obj]]) -> bool:
        uid = str(pod["metadata"]["uid"])
        mine = state.pods.get(uid)
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp"):
            return self._terminate(state, pod, mine)
        if phase in ("Succeeded", "Failed"):
            self._forget(state, uid)  # evicted or finished: it no longer holds resources
        elif mine is None and ((pod.get("status") or {}).get("startTime") or phase == "Running"):
            # Admitted before this kubelet process started (or before the simulation).
            mine = self._remember(state, pod, "running" if phase == "Running" else "pending")
            if mine.stage == "pending":
                self._schedule_start(state, mine, 0.0)
        elif mine is None:
            waiting.setdefault(state.name, []).append(pod)
        elif mine.stage in ("pending", "restarting") and mine.timer is None:
            self._schedule_start(state, mine, 0.0)
        elif mine.stage == "running" and (fields := podstatuses.resynced(pod)) is not None:
            self._write(pod, **fields)  # the status manager puts back what others changed
            return True
        return False

    def _admit(self, state: _Node, pod: Obj) -> bool:
        """``canAdmitPod``; rejected pods fail at once, admitted ones wait for their sandbox."""
        node = self.sim.get("nodes", "", state.name)
        if node is None or pod["metadata"]["uid"] in state.pods:
            return False
        usage = kubeletadmission.Usage()
        for other in state.pods.values():  # what each pod holds, worked out when first needed
            other.usage = other.usage or kubeletadmission.held(self.sim.get("pods", *other.key))
            usage.add(*other.usage)
        pressure = [t for t in PRESSURES if getattr(state.overrides.get(t), "status", "") == "True"]
        rejection = kubeletadmission.admit(pod, node, usage=usage, pressure=pressure)
        if rejection is not None:
            reason, message = rejection.reason, rejection.message
            self._patch_pod(
                pod, podstatuses.rejection_patch(pod, reason, message, stamp=self._stamp())
            )
            state.recorder.event(pod, "Warning", reason, message)
            return True
        mine = self._remember(state, pod, "pending")
        spec = pod.get("spec") or {}
        self._write(pod, **podstatuses.pending(spec), extra=podstatuses.addresses(state.host_ip))
        if self._blocker(state, pod) is None:
            for container in [*(spec.get("initContainers") or ()), *spec["containers"]]:
                if podstatuses.needs_pull(container, state.images):
                    mine.pulls[str(container["name"])] = self._draw(self.pull_seconds)
                    message = podstatuses.pulling_message(str(container.get("image")))
                    path = _path(pod, container)
                    state.recorder.event(pod, "Normal", "Pulling", message, field_path=path)
        self._schedule_start(state, mine, sum(mine.pulls.values()))
        return True

    def _blocker(self, state: _Node, pod: Obj) -> tuple[str, str] | None:
        hung = state.host.runtime == "hung"
        return podstatuses.sandbox_blocker(pod, runtime_hung=hung, network=self._network(state))

    def _schedule_start(self, state: _Node, mine: _Pod, extra: float) -> None:
        mine.cancel()
        delay = extra + self._draw(self.start_seconds)
        mine.timer = self.sim.after(delay, lambda: self._start(state, mine.uid))

    def _current(self, state: _Node, uid: str) -> tuple[_Pod, Obj] | None:
        """The kubelet's record and the stored pod, when both stand and the kubelet posts."""
        if (mine := state.pods.get(uid)) is None:
            return None
        mine.timer = None
        pod = self.sim.get("pods", *mine.key)
        if pod is None or pod["metadata"]["uid"] != uid:
            return None
        return (mine, pod) if self._observe(state, self.sim.seconds()) else None

    def _start(self, state: _Node, uid: str) -> None:
        """The pod worker's sync: sandbox, images, containers started, status Running."""
        found = self._current(state, uid)
        if found is None or found[0].stage not in ("pending", "restarting"):
            return
        mine, pod = found
        if pod["metadata"].get("deletionTimestamp"):
            return
        if (blocker := self._blocker(state, pod)) is not None:
            state.recorder.event(pod, "Warning", *blocker)
            retry = SYNC_RETRY + self.sim.random.uniform(0, 1)
            mine.timer = self.sim.after(retry, lambda: self._start(state, uid))
            return
        spec = pod.get("spec") or {}
        restarted = mine.stage == "restarting"
        for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            self._container_events(state, pod, mine, container, restarted=restarted)
        fields, delay = podstatuses.started(
            spec,
            previous=podstatuses.every_status(pod.get("status") or {}),
            new_id=lambda: f"containerd://{self.sim.random.getrandbits(256):064x}",
            stamp=self._stamp(),
            restarted=restarted,
            down_at=rfc3339(datetime.fromtimestamp(state.down_at, tz=UTC)),
        )
        state.ips.discard(mine.ip)
        mine.ip = state.host_ip if spec.get("hostNetwork") else self._pod_ip(state)
        state.ips.add(mine.ip)
        extra = podstatuses.addresses(state.host_ip, mine.ip, previous=pod.get("status"))
        self._write(pod, **fields, extra=extra)
        mine.stage, mine.pulls = "running", {}
        if delay > 0:
            mine.timer = self.sim.after(delay, lambda: self._ready(state, uid))

    def _container_events(
        self, state: _Node, pod: Obj, mine: _Pod, container: Obj, *, restarted: bool
    ) -> None:
        pulled = mine.pulls.get(str(container.get("name")))
        pulling = pulled is None and restarted and podstatuses.needs_pull(container, state.images)
        if pulling:
            pulled = self._draw(self.pull_seconds)
        state.images.add(str(container.get("image")))
        path = _path(pod, container)
        for reason, text in podstatuses.container_events(container, pulled=pulled, pulling=pulling):
            state.recorder.event(pod, "Normal", reason, text, field_path=path)

    def _ready(self, state: _Node, uid: str) -> None:
        """Readiness probes passing after their initial delay."""
        if (found := self._current(state, uid)) is not None and found[0].stage == "running":
            self._write(found[1], **podstatuses.readied(found[1].get("status") or {}))

    def _terminate(self, state: _Node, pod: Obj, mine: _Pod | None) -> bool:
        """A pod with a deletionTimestamp: stop its containers, then confirm the deletion."""
        uid = str(pod["metadata"]["uid"])
        if mine is not None and mine.stage == "stopping":
            if mine.timer is None:  # the kubelet was away when the containers were to stop
                mine.timer = self.sim.after(0.0, lambda: self._stopped(state, uid))
            return False
        if mine is None and (pod.get("status") or {}).get("phase") == "Running":
            mine = self._remember(state, pod, "running")
        if mine is None or mine.stage != "running":
            # Nothing runs (never started, terminal, or gone with a reboot): confirm at once.
            self._forget(state, uid)
            self._delete(pod)
            return True
        mine.cancel()
        mine.stage = "stopping"
        for path, message in podstatuses.killing_events(pod):
            state.recorder.event(pod, "Normal", "Killing", message, field_path=path)
        delay = min(podstatuses.grace_seconds(pod), self._draw(self.stop_seconds))
        mine.timer = self.sim.after(delay, lambda: self._stopped(state, uid))
        return True

    def _stopped(self, state: _Node, uid: str) -> None:
        """Containers stopped: the terminal status, then the deletion (grace 0, uid)."""
        if (found := self._current(state, uid)) is None:
            return
        mine, pod = found
        if state.host.runtime == "hung":  # StopContainer cannot reach the runtime: retry
            mine.timer = self.sim.after(SYNC_RETRY, lambda: self._stopped(state, uid))
            return
        self._write(pod, **podstatuses.stopped(pod.get("status") or {}, stamp=self._stamp()))
        self._forget(state, uid)
        self._delete(pod)

    # writing --------------------------------------------------------------------------------

    def _stamp(self) -> str:
        return self.sim.stamp()

    def _write(self, pod: Obj, **fields: Any) -> None:
        """A status patch (:func:`~kubemedic.sim.cluster.kubelet.podstatuses.status_patch` of
        ``fields``)."""
        self._patch_pod(pod, podstatuses.status_patch(pod, stamp=self._stamp(), **fields))

    def _patch_pod(self, pod: Obj, patch: Obj) -> None:
        namespace, name = key_of(pod)
        with _gone_is_fine():
            self.client.patch("v1", "Pod", name, patch, namespace=namespace, subresource="status")

    def _delete(self, pod: Obj) -> None:
        """The status manager's final delete: grace 0, only this incarnation (uid)."""
        (namespace, name), uid = key_of(pod), pod["metadata"]["uid"]
        with _gone_is_fine():
            self.client.delete("v1", "Pod", name, namespace=namespace, grace_seconds=0, uid=uid)

    def _pod_ip(self, state: _Node) -> str:
        node = self.sim.get("nodes", "", state.name) or {}
        cidr = str((node.get("spec") or {}).get("podCIDR") or "")
        found = podstatuses.pod_ip(
            cidr, node_index=state.index, used=state.ips, after=state.next_ip
        )
        ip, state.next_ip = found
        return ip

    def _draw(self, bounds: Range) -> float:
        return self.sim.random.uniform(*bounds)


@contextlib.contextmanager
def _gone_is_fine() -> Iterator[None]:
    """A write about a pod that may be gone or replaced meanwhile (404, 409): nothing to do."""
    try:
        yield
    except errors.StatusError as exc:
        if exc.code not in (404, 409):
            raise


def _path(pod: Obj, container: Obj) -> str:
    inits = (pod.get("spec") or {}).get("initContainers") or ()
    kind = "initContainers" if container in inits else "containers"
    return f"spec.{kind}{{{container.get('name')}}}"
