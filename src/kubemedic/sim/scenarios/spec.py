"""The scenario format: what a scenario file may say, as typed, validated models.

A scenario file describes the cluster when the story begins (node pools and objects) and the
actions that follow at given times of cluster time. This module is the reference for the format
and defines it (the pydantic models below check each field and each action's keys);
:mod:`kubemedic.sim.scenarios.loading` reads files, checks what spans fields (pools an action names,
kinds the simulator serves, usage annotations) and words the errors, and
:mod:`kubemedic.sim.scenarios.timeline` plays a scenario on a
:class:`~kubemedic.sim.cluster.assembly.Cluster`.

Format (keys are camelCase, as in Kubernetes manifests; unknown keys are errors)::

    name: my-scenario            # default: the file name without .yaml
    description: One paragraph on what happens and why.
    seed: 0                      # the simulation's random seed (runs are deterministic)
    start: 2026-01-01T00:00:00Z  # cluster time when the story begins (optional)
    duration: 30m                # how long `run` plays (the scenario's end)
    cluster:
      eventTTL: 1h               # the API server's --event-ttl
      resolution: 1s             # one engine step of cluster time
      name: sim                  # Cluster API cluster name (MachineDeployments)
      namespace: default         # namespace of the Cluster API objects
    pools:                       # node pools, present and Ready when the story begins
      - name: workers
        count: 3                 # nodes now (more can be added by the timeline)
        namePrefix: workers-     # default "<name>-": nodes workers-1, workers-2, ...
        provider: nodes          # "nodes": Node objects as registered by their kubelets;
                                 # "clusterapi": MachineDeployments (one per zone) provisioned
        capacity: {cpu: "8", memory: 8027168Ki, pods: 110}
        allocatable: {memory: 7900000Ki}   # default: capacity less 100Mi memory (the kubelet's
                                           # memory.available<100Mi eviction threshold)
        labels: {node-role: worker}
        taints: [{key: dedicated, value: batch, effect: NoSchedule}]
        startupTaints:           # new nodes (added by the timeline) register with these
          - {key: node.kubernetes.io/not-ready, effect: NoSchedule}
          - {key: node.kubernetes.io/network-unavailable, effect: NoSchedule,
             clearAfter: [30s, 3m], manager: kube-controller-manager}
        zones: [zone-a, zone-b]  # round-robin; label topology.kubernetes.io/zone
        region: region-1
        instanceType: n2-standard-8
        bootTime: [60s, 2m]      # how long a new or rebooted machine takes to boot
        autoscaling: {min: 1, max: 20}   # cluster-autoscaler node-group size annotations
        agent: {selfRepair: true}  # kubemedic's node agent (on every node; default: reports
                                   # conditions, answers requests, no self-repair); also
                                   # enabled, heartbeat (30s), grace (60s), cooldown (2m),
                                   # maxRestarts (3)
    objects:                     # written when the story begins, in order
      - manager: argocd-controller     # the field manager (managedFields read like a cluster's)
        operation: Apply               # Apply: server-side apply; Update: create (POST)
        manifests: [ {apiVersion: apps/v1, kind: Deployment, ...}, ... ]
    gitops:                      # an Argo CD Application synced from a real Git repository
      application: api-gateway   # its name (the tracking id's application)
      namespace: argocd          # its namespace; project: default
      path: apps/api-gateway     # directory in the repository (spec.source.path)
      revision: main             # the branch followed (spec.source.targetRevision)
      recurse: false             # directory.recurse, as Argo CD's default
      destinationNamespace: gateway   # namespace of manifests that name none
      repoURL: https://git.example.com/gateway.git   # shown when the repository is not kept
      syncInterval: 3m           # reconcile: the branch head synced when it moved (0: never)
      webhook: true              # a push syncs at once (Argo CD's Git webhook)
      selfHeal: false            # also re-apply an unchanged commit when the live state drifted
      commits:                   # the repository's history before the story begins
        - message: api-gateway, 12 replicas
          author: Ann Ops <ann@example.com>
          files: {apps/api-gateway/deployment.yaml: [ {apiVersion: apps/v1, ...} ]}
    timeline:
      - at: 2m                   # cluster time after the story begins
        action: edit             # see the actions below
        note: the engineer pins the pod to one node   # shown as the last action in progress
        repeat: {every: 10m, times: 3}                # optional, any action

Durations are ``90s``, ``5m``, ``1h30m``, ``1.5h``, ``500ms`` or a number of seconds, from 0 to
30 days; a range ``[30s, 3m]`` picks a value per node from the simulation's seeded random source.
Quantities are Kubernetes quantities (``800Mi``, ``100m``, ``8``).

Limits, so that a typo is refused when the file is read rather than building a cluster that never
finishes: at most 100,000 nodes at any time (pools, ``scale-pool`` and what its repeats add),
2,000,000 pods asked for (workload replicas, and each DaemonSet on every node), 1,000,000
firings of one action (``repeat``), 10,000,000 engine steps (``duration`` over
``cluster.resolution``, which is from 10ms to 1h).

Actions (``action:``):

- ``apply``: server-side apply of ``manifests`` (``manager`` default ``kubectl``, ``force``
  default true, as Argo CD and Flux apply with ``--force-conflicts``).
- ``create``: POST ``manifests`` (``manager`` default ``kubectl-create``; operation Update).
- ``patch``: PATCH ``target`` with ``patch`` (``patchType`` strategic | merge | json; ``manager``
  default ``kubectl-patch``; ``subresource`` e.g. ``scale`` or ``status``).
- ``edit``: what ``kubectl edit`` sends: a strategic merge ``patch`` as manager
  ``kubectl-edit`` with operation Update.
- ``delete``: DELETE ``target`` (``gracePeriodSeconds``, ``propagationPolicy``).
- ``fault``: set a host fault on the selected ``nodes``: ``kubelet-stopped``, ``kubelet-hung``,
  ``runtime-hung``, ``misconfig-transient`` (a reboot clears it), ``misconfig-persistent`` (a
  reboot does not), ``unreachable`` (network or control-plane fault: the kubelet runs but cannot
  post), ``power-off``; ``recovered`` clears every fault. ``for: 2m`` undoes the fault later.
- ``reboot``: reboot the selected ``nodes`` (new bootID; clears transient faults).
- ``scale-pool``: ``pool`` to ``replicas`` or by ``add`` nodes; a ``nodes`` pool gets new
  machines whose kubelets register once booted, spread over ``over`` (e.g. 100 nodes in 1m),
  or loses its newest machines (powered off, their Nodes deleted as the cloud node lifecycle
  controller does); a ``clusterapi`` pool gets its MachineDeployments' replicas patched through
  the scale subresource (``manager`` default ``cluster-autoscaler``).
- ``untaint``: remove the taint ``key`` from the selected ``nodes`` (``manager`` default
  ``kubectl-taint``).
- ``mark``: a clock marker; does nothing but show ``note`` in the progress.
- ``push``: a commit to the ``gitops`` repository's branch: ``message``, ``author`` and
  ``files`` (by path: a list of manifests written as multi-document YAML, one manifest, the
  text, or null to remove the file). Synced at once with ``webhook: true``, else at the next
  reconcile.
- ``sync``: the applier syncs the branch head now (``argocd app sync``, a refresh button).

``gitops``: the repository is written as the story goes (``sim run --git-out DIR``, else a
temporary one), ``commits`` before the story begins and each ``push`` when it fires, with the
cluster's time as the commit time; or an existing repository is followed (``sim run --git
DIR``; ``commits`` and pushes are then not written). The Application (``argoproj.io/v1alpha1``)
is created in ``namespace`` when the story begins and synced at once; each sync server-side
applies every manifest under ``path`` at the branch head as ``manager`` (default
``argocd-controller``, force), with Argo CD's tracking annotation, and records the commit in
the Application's ``status.sync``, ``status.resources`` and ``status.operationState``. See
:mod:`kubemedic.sim.scenarios.gitops`.

``target``: ``{kind, name, namespace, apiVersion}`` (apiVersion defaults to the kind's served
version). ``nodes`` selects at the time the action fires: ``names``, ``pool``, ``zone``,
``selector`` (label map or ``k=v,k2=v2``), then ``fraction`` (of what matched) or ``count``,
sampled with the seeded random source; ``all: true`` selects every node.

Usage annotations (``usage.sim.kubemedic.io/<container>`` on a pod or its template, a JSON
object with ``memory``, ``memoryPerNode``, ``memoryPerHour``, ``memoryMax``, ``cpu``,
``cpuPerNode``, ``startupCpu``) drive the usage model and are checked when a scenario is
parsed.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from kubemedic.model.durations import DurationError, parse_seconds
from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.machinery import managers
from kubemedic.sim.scenarios.targets import default_api_version, selector_labels

__all__ = [
    "MAX_FIRINGS",
    "MAX_NODES",
    "MAX_PODS",
    "MAX_SECONDS",
    "Action",
    "Apply",
    "Autoscaling",
    "ClusterSettings",
    "Commit",
    "Create",
    "Delete",
    "Duration",
    "DurationRange",
    "Edit",
    "Fault",
    "FaultKind",
    "FileContent",
    "GitOps",
    "Manifest",
    "Mark",
    "NodeAgent",
    "NodePool",
    "NodeSelection",
    "ObjectGroup",
    "Patch",
    "Push",
    "QuantityText",
    "Reboot",
    "Repeat",
    "ScalePool",
    "Scenario",
    "StartupTaint",
    "Sync",
    "Taint",
    "Target",
    "Untaint",
    "checked_quantity",
    "default_api_version",
    "parse_duration",
    "selector_labels",
    "show_value",
]


# durations and quantities --------------------------------------------------------------------


MAX_NODES = 100_000
"""Most nodes a scenario may have at once (its pools, and what its timeline adds)."""

MAX_PODS = 2_000_000
"""Most pods a scenario's workloads may ask for (replicas, and DaemonSets on every node)."""

MAX_SECONDS = 30 * 86400
"""Longest duration a scenario takes anywhere (its length, a time, a TTL, a range): 30 days."""

MAX_FIRINGS = 1_000_000
"""Most times one timeline action may fire (``repeat``)."""

RESOLUTION = (0.01, 3600.0)
"""Shortest and longest engine step (``cluster.resolution``), in seconds."""


def parse_duration(value: object) -> float:
    """Seconds in ``value``: a number of seconds or a Go duration such as ``90s``, ``1h30m``,
    ``1.5m``, ``500ms``, ``2d``, read by the one duration parser
    (:func:`kubemedic.model.durations.parse_seconds`), from 0 to 30 days. Raises ValueError in a
    scenario's words."""
    try:
        seconds = parse_seconds(value, bare_seconds=True)
    except DurationError:
        seconds = -1.0
    if not 0 <= seconds <= MAX_SECONDS:
        raise ValueError(
            f"{show_value(value)} is not a duration from 0s to 30d (e.g. 90s, 5m, 1h30m)"
        )
    return seconds


def _resolution(value: object) -> float:
    seconds = parse_duration(value)
    low, high = RESOLUTION
    if not low <= seconds <= high:
        raise ValueError(f"expected a duration from 10ms to 1h, got {show_value(value)}")
    return seconds


def _whole(low: int, high: int) -> BeforeValidator:
    """A whole number from ``low`` to ``high``; ValueError naming the range otherwise."""

    def check(value: object) -> int:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        if number is None or not low <= number <= high:
            raise ValueError(
                f"expected a whole number from {low:,} to {high:,}, got {show_value(value)}"
            )
        return number

    return BeforeValidator(check)


def _duration_range(value: object) -> tuple[float, float]:
    if isinstance(value, list | tuple):
        if len(value) != 2:
            raise ValueError(f"a duration range is [low, high], got {len(value)} items")
        low, high = parse_duration(value[0]), parse_duration(value[1])
        if high < low:
            raise ValueError(f"a duration range must not decrease: {show_value(list(value))}")
        return (low, high)
    seconds = parse_duration(value)
    return (seconds, seconds)


def checked_quantity(value: object) -> str:
    try:
        parse_quantity(value)
    except QuantityError:
        raise ValueError(f"{show_value(value)} is not a quantity (e.g. 800Mi, 100m, 8)") from None
    return str(value)


def show_value(value: object) -> str:
    """``value`` as a message echoes it (JSON), at most 200 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


_SHOWN = 200


Duration = Annotated[float, BeforeValidator(parse_duration)]
DurationRange = Annotated[tuple[float, float], BeforeValidator(_duration_range)]
QuantityText = Annotated[str, BeforeValidator(checked_quantity)]
Resolution = Annotated[float, BeforeValidator(_resolution)]
NodeCount = Annotated[int, _whole(0, MAX_NODES)]
Replicas = Annotated[int, _whole(0, MAX_PODS)]
Manifest = dict[str, Any]


# schema -----------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class Taint(_Model):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    def body(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out


class StartupTaint(Taint):
    """A taint a new node registers with until something finishes setting it up: removed
    ``clearAfter`` its registration by ``manager`` (an agent, the route controller).

    Two keys follow node conditions, as on a real cluster: ``node.kubernetes.io/not-ready``
    (what the ``TaintNodesByCondition`` admission plugin adds to every new Node; the node
    lifecycle controller removes it once the node is Ready, so ``clearAfter`` is not used) and
    ``node.kubernetes.io/network-unavailable`` (the kubelet of a cloud that configures routes
    registers with ``NetworkUnavailable=True``; at ``clearAfter`` ``manager`` sets it ``False``,
    ``RouteCreated``, and the node lifecycle controller lifts the taint)."""

    clear_after: DurationRange | None = None
    manager: str = managers.KUBE_CONTROLLER_MANAGER


class Autoscaling(_Model):
    min: NodeCount
    max: NodeCount


class NodeAgent(_Model):
    """kubemedic's node agent on a pool's nodes (it runs on every node by default, reporting
    its conditions and carrying out the repair controller's requests). ``selfRepair`` turns on
    its own restarts of a failing kubelet or container runtime, as GKE's ``health-monitor.sh``
    does: after ``grace`` of failure, at most once per ``cooldown``, giving up after
    ``maxRestarts`` restarts of one daemon in one boot. ``enabled: false``: no agent at all.
    ``heartbeat`` (default 30s, the contract's) is how often it writes its conditions when
    nothing changes; each write costs like a kubelet status update, so very large benchmarks
    may stretch it."""

    enabled: bool = True
    heartbeat: Annotated[float, BeforeValidator(parse_duration), Field(ge=1, le=3600)] = 30.0
    self_repair: bool = False
    grace: Duration = 60.0
    cooldown: Duration = 120.0
    max_restarts: Annotated[int, _whole(1, 1000)] = 3


class NodePool(_Model):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    count: NodeCount
    name_prefix: str | None = None
    provider: Literal["nodes", "clusterapi"] = "nodes"
    capacity: dict[str, QuantityText]
    allocatable: dict[str, QuantityText] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[StartupTaint] = Field(default_factory=list)
    zones: list[str] = Field(default_factory=list)
    region: str | None = None
    instance_type: str | None = None
    boot_time: DurationRange = (60.0, 60.0)
    autoscaling: Autoscaling | None = None
    agent: NodeAgent | None = None

    @field_validator("capacity")
    @classmethod
    def _needs_cpu_and_memory(cls, value: dict[str, str]) -> dict[str, str]:
        missing = [k for k in ("cpu", "memory") if k not in value]
        if missing:
            raise ValueError(f"capacity needs {' and '.join(missing)}")
        return value

    @property
    def prefix(self) -> str:
        return self.name_prefix if self.name_prefix is not None else f"{self.name}-"


class ClusterSettings(_Model):
    event_ttl: Duration = Field(default=3600.0, alias="eventTTL")
    resolution: Resolution = 1.0
    name: str = "sim"
    namespace: str = "default"


class ObjectGroup(_Model):
    manager: str = managers.KUBECTL
    operation: Literal["Apply", "Update"] = "Apply"
    manifests: list[Manifest] = Field(min_length=1)


class Repeat(_Model):
    every: Duration
    times: Annotated[int, _whole(1, MAX_FIRINGS)] | None = None
    until: Duration | None = None


class Target(_Model):
    kind: str
    name: str
    namespace: str = ""
    api_version: str = ""


class NodeSelection(_Model):
    names: list[str] = Field(default_factory=list)
    pool: str | None = None
    zone: str | None = None
    selector: dict[str, str] | str | None = None
    fraction: float | None = Field(default=None, gt=0, le=1)
    count: Annotated[int, _whole(1, MAX_NODES)] | None = None
    all: bool = False


class _Action(_Model):
    at: Duration
    note: str = ""
    repeat: Repeat | None = None


class Apply(_Action):
    action: Literal["apply"]
    manifests: list[Manifest] = Field(min_length=1)
    manager: str = managers.KUBECTL
    force: bool = True


class Create(_Action):
    action: Literal["create"]
    manifests: list[Manifest] = Field(min_length=1)
    manager: str = managers.KUBECTL_CREATE


class Patch(_Action):
    action: Literal["patch"]
    target: Target
    patch: Any
    patch_type: Literal["strategic", "merge", "json"] = "strategic"
    manager: str = managers.KUBECTL_PATCH
    subresource: str = ""


class Edit(_Action):
    action: Literal["edit"]
    target: Target
    patch: dict[str, Any]
    manager: str = managers.KUBECTL_EDIT


class Delete(_Action):
    action: Literal["delete"]
    target: Target
    grace_period_seconds: Annotated[int, _whole(0, MAX_SECONDS)] | None = None
    propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None
    manager: str = managers.KUBECTL


FaultKind = Literal[
    "kubelet-stopped",
    "kubelet-hung",
    "runtime-hung",
    "misconfig-transient",
    "misconfig-persistent",
    "unreachable",
    "power-off",
    "recovered",
]


class Fault(_Action):
    action: Literal["fault"]
    fault: FaultKind
    nodes: NodeSelection
    for_: Duration | None = Field(default=None, alias="for")


class Reboot(_Action):
    action: Literal["reboot"]
    nodes: NodeSelection


class ScalePool(_Action):
    action: Literal["scale-pool"]
    pool: str
    replicas: NodeCount | None = None
    add: Annotated[int, _whole(1, MAX_NODES)] | None = None
    over: Duration = 0.0
    manager: str = managers.CLUSTER_AUTOSCALER


class Untaint(_Action):
    action: Literal["untaint"]
    nodes: NodeSelection
    key: str
    manager: str = managers.KUBECTL_TAINT


class Mark(_Action):
    action: Literal["mark"]


FileContent = list[Manifest] | Manifest | str | None
"""A file of a commit: manifests (written as multi-document YAML), one manifest, the text
itself, or null (the file is removed)."""

DEFAULT_AUTHOR = "Platform Team <platform@example.com>"


def _author(value: object) -> str:
    text = str(value) if isinstance(value, str) else ""
    name, _, email = text.partition("<")
    if not name.strip() or not email.endswith(">") or "@" not in email:
        raise ValueError(
            f'{show_value(value)} is not an author such as "Ann Ops <ann@example.com>"'
        )
    return text


Author = Annotated[str, BeforeValidator(_author)]


class Commit(_Model):
    """One commit of a ``gitops`` repository: ``files`` by path from the repository's root."""

    message: str = Field(min_length=1)
    author: Author = DEFAULT_AUTHOR
    files: dict[str, FileContent] = Field(min_length=1)


class Push(_Action):
    action: Literal["push"]
    message: str = Field(min_length=1)
    author: Author = DEFAULT_AUTHOR
    files: dict[str, FileContent] = Field(min_length=1)


class Sync(_Action):
    action: Literal["sync"]


class GitOps(_Model):
    """An Argo CD Application and the applier that syncs it from a real Git repository (see the
    module docstring and :mod:`kubemedic.sim.scenarios.gitops`)."""

    application: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)
    namespace: str = "argocd"
    project: str = "default"
    path: str = ""
    revision: str = "main"
    recurse: bool = False
    destination_namespace: str = ""
    repo_url: str = Field(default="", alias="repoURL")
    sync_interval: Duration = 180.0
    webhook: bool = False
    self_heal: bool = False
    manager: str = managers.ARGOCD_CONTROLLER
    commits: list[Commit] = Field(default_factory=list)


Action = Annotated[
    Apply
    | Create
    | Patch
    | Edit
    | Delete
    | Fault
    | Reboot
    | ScalePool
    | Untaint
    | Mark
    | Push
    | Sync,
    Field(discriminator="action"),
]


class Scenario(_Model):
    """A scenario whose fields are valid (see the module docstring for the format); one from
    :func:`kubemedic.sim.scenarios.loading.parse` has also passed the checks that span fields."""

    name: str = ""
    description: str = ""
    seed: Annotated[int, _whole(-(2**63), 2**63 - 1)] = 0
    start: datetime | None = None
    duration: Duration = 1800.0
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    pools: list[NodePool] = Field(default_factory=list)
    objects: list[ObjectGroup] = Field(default_factory=list)
    gitops: GitOps | None = None
    timeline: list[Action] = Field(default_factory=list)
    #: Where the scenario was read from ("" for one parsed from text).
    source: str = Field(default="", exclude=True)

    def pool(self, name: str) -> NodePool | None:
        return next((p for p in self.pools if p.name == name), None)
