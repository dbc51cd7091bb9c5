"""Nova's servers, mapped onto the simulator's VMs and hosts, and their power actions.

**Which servers exist.** A server is a running VM of the infrastructure provider whose provider
ID is OpenStack's (``openstack:///<uuid>``: the uuid is the server id), or a Node whose
``spec.providerID`` is OpenStack's (``openstack:///<uuid>`` or ``openstack://<region>/<uuid>``)
and whose host the simulator knows. A VM being deleted is still listed (task ``deleting``) until
it is gone; a VM still provisioning has no id yet and is not listed.

**States**, as Nova shows them (``nova/api/openstack/common.py``):

============  ==========  ============================  ==========================
``status``    vm_state    task_state                    power_state
============  ==========  ============================  ==========================
ACTIVE        active      ``None`` (or ``deleting``)    1 (RUNNING)
HARD_REBOOT   active      ``reboot_started_hard``       1 (RUNNING)
REBOOT        active      ``reboot_started``            1 (RUNNING)
SHUTOFF       stopped     ``None`` (or ``deleting``)    4 (SHUTDOWN)
============  ==========  ============================  ==========================

**Actions** act on the host at once, as the hypervisor does: ``reboot`` restarts the host (a new
``bootID`` once it has booted; ``HARD`` also powers on a stopped server), ``os-stop`` powers it
off, ``os-start`` powers it on (it boots). A reboot's task lasts :attr:`Servers.reboot_seconds`
of cluster time (the hypervisor restarting the instance); the guest then boots for its host's
``boot_seconds`` while the server is ``ACTIVE``, as on Nova, which does not wait for the guest.
An action the server's state forbids raises :class:`Conflict` with Nova's sentence
(``Cannot 'start' instance <id> while it is in vm_state active``): ``os-start`` needs
``stopped``, ``os-stop`` needs ``active``, a ``SOFT`` reboot needs ``active``, a ``HARD`` one
``active`` or ``stopped``; ``os-stop`` and ``os-start`` also need no task in progress, and a
``SOFT`` reboot none but another soft one. A host powered off or rebooted by other means
(a scenario, the infrastructure provider) shows as Nova's power-state sync would see it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.infra.providers import Flavor, Infrastructure
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.machinery.objects import Obj

__all__ = ["Conflict", "Instance", "Servers", "State", "server_id"]

_PROVIDER_ID = re.compile(r"^openstack://[^/]*/([^/]+)$")

RUNNING, SHUTDOWN = 1, 4
REBOOT_TASKS = {"HARD": "reboot_started_hard", "SOFT": "reboot_started"}


def server_id(provider_id: str) -> str | None:
    """The server id in an OpenStack provider ID (``openstack:///<id>``,
    ``openstack://<region>/<id>``); ``None`` for another provider's."""
    match = _PROVIDER_ID.match(provider_id)
    return match.group(1) if match else None


class Conflict(Exception):
    """Nova's 409: the server's state forbids the action (``str()`` is Nova's sentence)."""


@dataclass(frozen=True)
class Instance:
    """One server as Nova knows it (what does not change while it lives)."""

    id: str
    name: str
    host: Host
    created: float
    zone: str = ""
    address: str = ""
    flavor: Flavor = field(default_factory=Flavor)
    deleting: bool = False


@dataclass(frozen=True)
class State:
    status: str
    vm_state: str
    task_state: str | None
    power_state: int


@dataclass
class _Task:
    state: str
    until: float
    boot_id: str


class Servers:
    """The cloud's servers over one simulation's VMs and hosts."""

    #: How long a reboot's task shows (cluster seconds).
    reboot_seconds = 10.0

    def __init__(self, sim: Simulation, hosts: Hosts) -> None:
        self.sim = sim
        self.hosts = hosts
        self._tasks: dict[str, _Task] = {}

    # inventory ---------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Instance]:
        """Every server, VMs first (by name), then Nodes not backed by a VM (by name)."""
        seen: set[str] = set()
        infrastructure = self.sim.find(Infrastructure)
        vms = sorted(infrastructure.vms.values(), key=lambda v: v.name) if infrastructure else []
        for vm in vms:
            sid = server_id(vm.provider_id)
            host = self.hosts.find(vm.name)
            if sid is None or host is None or vm.state not in ("running", "deleting"):
                continue
            seen.add(sid)
            yield Instance(
                id=sid,
                name=vm.name,
                host=host,
                created=vm.created,
                zone=vm.zone,
                address=vm.address,
                flavor=vm.flavor,
                deleting=vm.state == "deleting",
            )
        for node in sorted(self.sim.objects("nodes"), key=lambda n: n["metadata"]["name"]):
            instance = self._of_node(node)
            if instance is not None and instance.id not in seen:
                seen.add(instance.id)
                yield instance

    def _of_node(self, node: Obj) -> Instance | None:
        sid = server_id(str((node.get("spec") or {}).get("providerID") or ""))
        meta = node["metadata"]
        host = self.hosts.find(meta["name"])
        if sid is None or host is None:
            return None
        labels = meta.get("labels") or {}
        addresses = (node.get("status") or {}).get("addresses") or []
        created = self.sim.seconds()
        stamp = meta.get("creationTimestamp")
        if stamp:
            moment = parse_time(stamp)
            created = moment.timestamp() if moment else created
        return Instance(
            id=sid,
            name=meta["name"],
            host=host,
            created=created,
            zone=labels.get("topology.kubernetes.io/zone", ""),
            address=next((a["address"] for a in addresses if a.get("type") == "InternalIP"), ""),
            flavor=Flavor(instance_type=labels.get("node.kubernetes.io/instance-type", "")),
        )

    def get(self, sid: str) -> Instance | None:
        return next((s for s in self if s.id == sid), None)

    # state -------------------------------------------------------------------------------------

    def _task(self, server: Instance) -> _Task | None:
        task = self._tasks.get(server.id)
        if task is None:
            return None
        host = server.host
        if self.sim.seconds() >= task.until or host.boot_id != task.boot_id or not host.powered:
            del self._tasks[server.id]
            return None
        return task

    def state(self, server: Instance) -> State:
        task = self._task(server)
        if not server.host.powered:
            return State("SHUTOFF", "stopped", "deleting" if server.deleting else None, SHUTDOWN)
        if server.deleting:
            return State("ACTIVE", "active", "deleting", RUNNING)
        if task is not None:
            status = "HARD_REBOOT" if task.state == REBOOT_TASKS["HARD"] else "REBOOT"
            return State(status, "active", task.state, RUNNING)
        return State("ACTIVE", "active", None, RUNNING)

    # actions -----------------------------------------------------------------------------------

    def _refuse(self, server: Instance, action: str, state: State, *, task: bool) -> Conflict:
        attr, value = ("task_state", state.task_state) if task else ("vm_state", state.vm_state)
        return Conflict(f"Cannot '{action}' instance {server.id} while it is in {attr} {value}")

    def _check(
        self,
        server: Instance,
        action: str,
        vm_states: tuple[str, ...],
        tasks: tuple[str | None, ...],
    ) -> State:
        """Nova's ``check_instance_state``: the vm_state first, then the task_state."""
        state = self.state(server)
        if state.vm_state not in vm_states:
            raise self._refuse(server, action, state, task=False)
        if state.task_state not in tasks:
            raise self._refuse(server, action, state, task=True)
        return state

    def reboot(self, server: Instance, kind: str) -> None:
        """``kind`` is ``HARD`` or ``SOFT``."""
        if kind == "HARD":
            self._check(server, "reboot", ("active", "stopped"), (None, *REBOOT_TASKS.values()))
        else:
            self._check(server, "reboot", ("active",), (None, REBOOT_TASKS["SOFT"]))
        now = self.sim.seconds()
        server.host.reboot(now)
        until = min(now + self.reboot_seconds, server.host.booting_until)
        self._tasks[server.id] = _Task(REBOOT_TASKS[kind], until, server.host.boot_id)

    def stop(self, server: Instance) -> None:
        self._check(server, "stop", ("active",), (None,))
        server.host.power_off()

    def start(self, server: Instance) -> None:
        self._check(server, "start", ("stopped",), (None,))
        server.host.power_on(self.sim.seconds())
