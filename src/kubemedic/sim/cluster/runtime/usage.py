"""How much memory and CPU each simulated container uses, over cluster time.

A real cluster's usage comes from the processes in its containers; here it comes from a small,
deterministic model that scenarios steer with one annotation per container on the pod (or on
the pod template, so every replica inherits it)::

    usage.sim.kubemedic.io/<container-name>: '{"memory": "300Mi", "memoryPerNode": "40Mi"}'

Keys (all optional; quantities as in a pod spec):

- ``memory``: base working set; default half the container's memory request, else ``64Mi``;
- ``memoryPerNode``: added per Node in the cluster (Prometheus scraping one node-exporter per
  node holds more series as nodes are added);
- ``memoryPerHour``: growth per hour since the container started (a leak; a restart resets it);
- ``memoryMax``: cap on the modelled working set;
- ``cpu``: CPU the container needs in steady state; default 30% of its CPU request, else
  ``10m``;
- ``cpuPerNode``: CPU added per Node;
- ``startupCpu``: CPU needed during the first five minutes after the container started
  (JIT warm-up, cache loading); the need is the larger of this and the steady need.

When the needs on a node exceed its CPU, :func:`allocate_cpu` says what each container gets;
one that gets less than it needs answers its probes late (:func:`starved_probe_output`).

Only a running container uses anything: a waiting or terminated one reads 0, and a container's
growth counts from its current ``state.running.startedAt`` (as a restarted process starts
small). Memory is a working set in bytes, rounded down to the 4 KiB page size; CPU is in
millicores.

The model is read at high rates (the eviction manager looks at every running container of a
node every 10 s; metrics-server at every pod), so parsed annotations are cached per pod uid and
re-parsed only when the annotation text changes. The Node count is kept current by watching
nodes once the model is attached to a :class:`~kubemedic.sim.cluster.runtime.engine.Simulation`.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from kubemedic.errors import InputError
from kubemedic.model.objects import parse_time
from kubemedic.model.quantities import QuantityError, parse_quantity

if TYPE_CHECKING:
    from kubemedic.sim.cluster.runtime.engine import Simulation
    from kubemedic.sim.machinery.objects import Change

__all__ = [
    "ANNOTATION_PREFIX",
    "STARTUP_SECONDS",
    "SYSTEM_ANNOTATION",
    "ContainerUsage",
    "UsageError",
    "UsageModel",
    "allocate_cpu",
    "parse_usage",
    "starved_probe_output",
    "system_usage",
]

log = logging.getLogger(__name__)

ANNOTATION_PREFIX = "usage.sim.kubemedic.io/"
#: Node annotation overriding what the system daemons use: ``{"memory": q, "cpu": q}``.
SYSTEM_ANNOTATION = ANNOTATION_PREFIX + "system"
#: How long ``startupCpu`` applies after a container starts.
STARTUP_SECONDS = 300.0
#: The smallest ``cpu.shares`` the kubelet gives a container (2 shares = 2 millicores).
MIN_SHARES = 2
_PAGE = 4096
_DEFAULT_MEMORY = 64 * 1024 * 1024
_DEFAULT_CPU = 10
_KEYS = frozenset(
    ("memory", "memoryPerNode", "memoryPerHour", "memoryMax", "cpu", "cpuPerNode", "startupCpu")
)


class UsageError(InputError, ValueError):
    """A usage annotation that cannot be read; the message names the pod and container."""


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    """One container's parsed usage model plus the resources its spec declares."""

    memory: int
    memory_per_node: int = 0
    memory_per_hour: int = 0
    memory_max: int | None = None
    cpu: int = _DEFAULT_CPU
    cpu_per_node: int = 0
    startup_cpu: int | None = None
    #: Spec resources: bytes and millicores; None when not set.
    memory_request: int | None = None
    memory_limit: int | None = None
    cpu_request: int | None = None
    cpu_limit: int | None = None

    @property
    def grows(self) -> bool:
        """Whether memory changes with time alone (not only with the node count)."""
        return self.memory_per_hour != 0

    @property
    def per_node(self) -> bool:
        return self.memory_per_node != 0 or self.cpu_per_node != 0

    def memory_at(self, *, running_seconds: float, node_count: int) -> int:
        value = self.memory + self.memory_per_node * node_count
        if self.memory_per_hour:
            value += int(self.memory_per_hour * max(0.0, running_seconds) / 3600.0)
        if self.memory_max is not None:
            value = min(value, self.memory_max)
        return max(0, value - value % _PAGE)

    def cpu_at(self, *, running_seconds: float, node_count: int) -> int:
        value = self.cpu + self.cpu_per_node * node_count
        if self.startup_cpu is not None and running_seconds < STARTUP_SECONDS:
            value = max(value, self.startup_cpu)
        return max(0, value)


def _bytes(value: Any, where: str) -> int:
    return math.ceil(parse_quantity(value, where=where).value)


def _millis(value: Any, where: str) -> int:
    return parse_quantity(value, where=where).milli


def _resources(container: Mapping[str, Any], where: str) -> dict[str, int | None]:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    out: dict[str, int | None] = {}
    for name, source, key in (
        ("memory_request", requests, "memory"),
        ("memory_limit", limits, "memory"),
        ("cpu_request", requests, "cpu"),
        ("cpu_limit", limits, "cpu"),
    ):
        raw = source.get(key)
        if raw is None:
            out[name] = None
            continue
        try:
            out[name] = _bytes(raw, where) if key == "memory" else _millis(raw, where)
        except QuantityError:
            out[name] = None
    # A limit without a request defaults the request to the limit (as the API server does).
    if out["memory_request"] is None:
        out["memory_request"] = out["memory_limit"]
    if out["cpu_request"] is None:
        out["cpu_request"] = out["cpu_limit"]
    return out


def parse_usage(text: str | None, container: Mapping[str, Any], *, where: str) -> ContainerUsage:
    """The usage model of ``container`` from its annotation ``text`` (None: defaults only).

    Raises :class:`UsageError` naming ``where`` (e.g. ``pod jhub/hub-0 container hub``) for
    malformed JSON, unknown keys or bad quantities, so scenario validation can report them.
    """
    resources = _resources(container, where)
    fields: dict[str, Any] = {}
    if text:
        try:
            raw = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"{where}: usage annotation is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise UsageError(f"{where}: usage annotation must be a JSON object")
        unknown = sorted(set(raw) - _KEYS)
        if unknown:
            raise UsageError(
                f"{where}: unknown usage key(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_KEYS))})"
            )
        try:
            for key, value in raw.items():
                convert = _bytes if key.startswith("memory") else _millis
                amount = convert(value, f"{where} {key}")
                if amount < 0:
                    raise UsageError(f"{where}: usage {key} must not be negative, got {value!r}")
                fields[_snake(key)] = amount
        except QuantityError as exc:
            raise UsageError(str(exc)) from None
    if "memory" not in fields:
        request = resources["memory_request"]
        fields["memory"] = request // 2 if request else _DEFAULT_MEMORY
    if "cpu" not in fields:
        request = resources["cpu_request"]
        fields["cpu"] = math.ceil(request * 0.3) if request else _DEFAULT_CPU
    return ContainerUsage(
        **fields,
        memory_request=resources["memory_request"],
        memory_limit=resources["memory_limit"],
        cpu_request=resources["cpu_request"],
        cpu_limit=resources["cpu_limit"],
    )


def _parse_shared(text: str | None, container: Mapping[str, Any], *, where: str) -> ContainerUsage:
    """:func:`parse_usage`, shared by the containers with the same annotation and resources
    (every pod of a workload): a 60,000-pod cluster has a few thousand distinct models. Errors
    are raised by the uncached parse, which names the pod."""
    try:
        resources = orjson.dumps(container.get("resources") or {})
        return _parse_cached(text, resources)
    except (UsageError, TypeError):
        return parse_usage(text, container, where=where)


@functools.lru_cache(maxsize=8192)
def _parse_cached(text: str | None, resources: bytes) -> ContainerUsage:
    return parse_usage(text, {"resources": orjson.loads(resources)}, where="")


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def containers_of(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The containers that run for the pod's lifetime: regular ones and restartable init
    containers (sidecars)."""
    spec = pod.get("spec") or {}
    out: list[Mapping[str, Any]] = list(spec.get("containers") or ())
    out += [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    return out


def started_at(pod: Mapping[str, Any], name: str) -> float | None:
    """POSIX seconds when the named container's current run started, or None when it is not
    running."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") != name:
            continue
        running = (status.get("state") or {}).get("running")
        if running is None:
            return None
        moment = parse_time(running.get("startedAt"))
        return moment.timestamp() if moment is not None else None
    for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
        if status.get("name") == name:
            running = (status.get("state") or {}).get("running")
            moment = parse_time(running.get("startedAt")) if running else None
            return moment.timestamp() if moment is not None else None
    return None


@dataclass(slots=True)
class _Cached:
    key: tuple[tuple[str, str], ...]
    spec: Any
    resources: list[Any]
    containers: dict[str, ContainerUsage]


class UsageModel:
    """Per-container memory and CPU usage of the simulated cluster (deterministic)."""

    name = "usage"

    def __init__(self, *, node_count: int = 0) -> None:
        #: Nodes in the cluster (kept current by watching nodes once attached).
        self.node_count = node_count
        self._cache: dict[str, _Cached] = {}
        self._nodes: set[str] = set()
        self._warned: set[str] = set()

    # component ---------------------------------------------------------------------------------

    def attach(self, sim: Simulation) -> None:
        self._nodes = {str(n["metadata"]["name"]) for n in sim.objects("nodes")}
        self.node_count = len(self._nodes)
        sim.watch("nodes", self._on_node)
        sim.watch("pods", self._on_pod)

    def sync(self) -> bool:
        return False

    def _on_node(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        if change.type == "DELETED":
            self._nodes.discard(name)
        else:
            self._nodes.add(name)
        self.node_count = len(self._nodes)

    def _on_pod(self, change: Change) -> None:
        if change.type == "DELETED":
            self._cache.pop(str(change.obj["metadata"].get("uid", "")), None)

    # reading -----------------------------------------------------------------------------------

    def spec(self, pod: Mapping[str, Any], container_name: str) -> ContainerUsage | None:
        """The parsed model of one container (None when the pod has no such container)."""
        return self.specs(pod).get(container_name)

    def specs(self, pod: Mapping[str, Any]) -> dict[str, ContainerUsage]:
        """The parsed models of the pod's long-running containers, by name."""
        meta = pod.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        key = tuple((k, str(v)) for k, v in annotations.items() if k.startswith(ANNOTATION_PREFIX))
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        cached = self._cache.get(uid)
        spec = pod.get("spec")
        if cached is not None and cached.key == key:
            if cached.spec is spec:
                return cached.containers
            resources = [c.get("resources") for c in containers_of(pod)]
            if resources == cached.resources:  # a new copy of the same spec
                cached.spec = spec
                return cached.containers
        texts = dict(key)
        parsed: dict[str, ContainerUsage] = {}
        for container in containers_of(pod):
            name = str(container.get("name", ""))
            where = f"pod {meta.get('namespace')}/{meta.get('name')} container {name}"
            text = texts.get(ANNOTATION_PREFIX + name)
            try:
                parsed[name] = _parse_shared(text, container, where=where)
            except UsageError as exc:
                if where not in self._warned:
                    self._warned.add(where)
                    log.warning("%s; using the defaults", exc)
                parsed[name] = parse_usage(None, container, where=where)
        resources = [c.get("resources") for c in containers_of(pod)]
        self._cache[uid] = _Cached(key, spec, resources, parsed)
        return parsed

    def memory(self, pod: Mapping[str, Any], container_name: str, now_seconds: float) -> int:
        """Working set of a running container, in bytes (0 when not running)."""
        model = self.spec(pod, container_name)
        started = started_at(pod, container_name)
        if model is None or started is None:
            return 0
        return model.memory_at(running_seconds=now_seconds - started, node_count=self.node_count)

    def cpu(self, pod: Mapping[str, Any], container_name: str, now_seconds: float) -> int:
        """CPU a running container needs, in millicores (0 when not running)."""
        model = self.spec(pod, container_name)
        started = started_at(pod, container_name)
        if model is None or started is None:
            return 0
        return model.cpu_at(running_seconds=now_seconds - started, node_count=self.node_count)

    def pod_memory(self, pod: Mapping[str, Any], now_seconds: float) -> int:
        """The pod's working set: the sum over its running containers."""
        return sum(self.memory(pod, name, now_seconds) for name in self.specs(pod))

    def pod_cpu(self, pod: Mapping[str, Any], now_seconds: float) -> int:
        return sum(self.cpu(pod, name, now_seconds) for name in self.specs(pod))


def allocate_cpu(capacity: int, demands: Sequence[tuple[int, int, int | None]]) -> list[int]:
    """CPU each container gets (millicores) when ``demands`` compete for ``capacity``.

    Each demand is ``(need, request, limit)``. The Linux CFS scheduler divides contended CPU in
    proportion to ``cpu.shares``, which the kubelet sets from the CPU request (at least 2
    shares); a container that needs less than its proportional share leaves the rest to the
    others (weighted max-min fairness), and none gets more than its limit (the CFS quota).
    When the needs fit, everyone gets what it needs, up to its limit.
    """
    caps = [min(need, limit) if limit is not None else need for need, _, limit in demands]
    if sum(caps) <= capacity:
        return caps
    weights = [max(MIN_SHARES, request or 0) for _, request, _ in demands]
    alloc = [0] * len(demands)
    order = sorted(range(len(demands)), key=lambda i: caps[i] / weights[i])
    remaining = float(capacity)
    weight_left = float(sum(weights))
    for position, i in enumerate(order):
        share = remaining * weights[i] / weight_left if weight_left else 0.0
        if caps[i] <= share:
            alloc[i] = caps[i]
            remaining -= caps[i]
            weight_left -= weights[i]
            continue
        # Everyone from here on is limited by its share of what is left.
        per_weight = remaining / weight_left if weight_left else 0.0
        for j in order[position:]:
            alloc[j] = int(per_weight * weights[j])
        break
    return alloc


def system_usage(node: Mapping[str, Any], *, threshold: int = 100 * 1024 * 1024) -> tuple[int, int]:
    """Memory (bytes) and CPU (millicores) the node's system daemons use (kubelet, runtime,
    OS): by default what the node reserves for them, which is capacity minus allocatable
    (less the hard eviction ``threshold`` for memory, which allocatable also subtracts); the
    node annotation ``usage.sim.kubemedic.io/system`` (``{"memory": "1Gi", "cpu": "200m"}``)
    overrides either."""
    status = node.get("status") or {}
    capacity = status.get("capacity") or {}
    allocatable = status.get("allocatable") or {}
    values: list[int] = []
    for resource, convert in (("memory", _bytes), ("cpu", _millis)):
        try:
            total = convert(capacity.get(resource, 0), resource)
            spare = total - convert(allocatable.get(resource, capacity.get(resource, 0)), resource)
        except QuantityError:
            spare = 0
        values.append(max(0, spare - threshold if resource == "memory" else spare))
    override = ((node.get("metadata") or {}).get("annotations") or {}).get(SYSTEM_ANNOTATION)
    if override:
        try:
            raw = orjson.loads(override)
            if "memory" in raw:
                values[0] = _bytes(raw["memory"], SYSTEM_ANNOTATION)
            if "cpu" in raw:
                values[1] = _millis(raw["cpu"], SYSTEM_ANNOTATION)
        except (orjson.JSONDecodeError, TypeError, QuantityError) as exc:
            log.warning("node %s: bad %s annotation: %s", node.get("metadata", {}).get("name"),
                        SYSTEM_ANNOTATION, exc)  # fmt: skip
    return values[0], values[1]


_HTTP_TIMEOUT = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"


def starved_probe_output(
    pod: Mapping[str, Any], container: Mapping[str, Any], probe: Mapping[str, Any]
) -> str:
    """What the kubelet's prober reports when a starved container answers ``probe`` too late,
    per handler: ``httpGet`` through Go's HTTP client, ``tcpSocket`` dialling, ``grpc``'s
    health RPC, ``exec`` through the CRI (``pkg/probe``, ``remote_runtime.go``)."""
    ip = str((pod.get("status") or {}).get("podIP") or "")
    if "httpGet" in probe:
        get = probe["httpGet"]
        scheme = str(get.get("scheme") or "HTTP").lower()
        host = f"{get.get('host') or ip}:{_port(container, get.get('port'))}"
        return f'Get "{scheme}://{host}{get.get("path", "")}": {_HTTP_TIMEOUT}'
    if "tcpSocket" in probe:
        tcp = probe["tcpSocket"]
        return f"dial tcp {tcp.get('host') or ip}:{_port(container, tcp.get('port'))}: i/o timeout"
    if "grpc" in probe:
        minutes, seconds = divmod(int(probe.get("timeoutSeconds") or 1), 60)
        timeout = f"{minutes}m{seconds}s" if minutes else f"{seconds}s"  # time.Duration
        return f"timeout: health rpc did not complete within {timeout}"
    command = " ".join(str(part) for part in (probe.get("exec") or {}).get("command") or ())
    return f"command {orjson.dumps(command).decode()} timed out"


def _port(container: Mapping[str, Any], port: Any) -> str:
    for declared in container.get("ports") or ():
        if isinstance(port, str) and declared.get("name") == port:
            return str(declared.get("containerPort"))
    return str(port)
