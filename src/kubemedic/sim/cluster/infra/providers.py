"""The infrastructure provider: virtual machines behind Cluster API Machines, and power controls.

A Cluster API infrastructure provider (CAPO for OpenStack, CAPA, CAPZ...) turns each Machine's
InfrastructureMachine into a VM: it creates the instance, reports ``spec.providerID`` and
``status.ready`` once the instance is up (the Machine controller mirrors both into the
Machine), and deletes the instance when the Machine is deleted. The simulator keeps the VMs in
memory (the emulator serves no provider CRDs) and the Cluster API component asks
:meth:`Infrastructure.provision`, :meth:`Infrastructure.vm` and :meth:`Infrastructure.release`:

- ``provision`` starts a VM; after ``provision_seconds`` it is running: it gets a
  ``<provider>:///<uuid>`` provider ID and an internal IP, its
  :class:`~kubemedic.sim.cluster.runtime.hosts.Host` boots (``Host.boot_seconds``), and the kubelet
  is asked to register the Node (``Kubelets.register``) with what kubeadm and the cloud provider
  give a new node: hostname, OS, architecture, instance type, region and zone labels (the Machine's
  ``failureDomain`` is the zone), the provider ID, the
  ``node.cluster.x-k8s.io/uninitialized:NoSchedule`` taint Cluster API removes once it has labelled
  the node, and capacity.
- ``release`` powers the VM off at once and forgets its host after ``delete_seconds``.

**Sizes.** A VM's size (its *flavor*) comes from :attr:`Infrastructure.flavors` keyed by the
MachineDeployment or MachineSet name, else from the cluster-autoscaler's scale-from-zero
annotations on the MachineDeployment or MachineSet (``capacity.cluster-autoscaler.kubernetes.io/``
``cpu``, ``memory``, ``maxPods``, ``ephemeral-disk``, ``labels`` as ``k=v,k2=v2``, ``taints`` as
``k=v:Effect,...``), else the default flavor (4 CPUs, 16Gi, 110 pods).

**Power controls** for scenarios and repair executors: :meth:`reboot`, :meth:`power_off`,
:meth:`power_on` and :meth:`delete` take a Machine or Node body, or a machine or node name.
``delete`` deletes the Machine (Cluster API drains the node and replaces the machine); for a
node without a machine it destroys the instance and, as the cloud node lifecycle controller
does, deletes the Node. Clients of the HTTP API ask for the same by annotating a Machine or Node
with ``infrastructure.sim.kubemedic.io/action: reboot|power-off|power-on|delete``; the provider
acts once and removes the annotation (field manager ``infrastructure-provider``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["ACTION_ANNOTATION", "VM", "Flavor", "Infrastructure", "NodeRegistrar"]

log = logging.getLogger(__name__)

ACTION_ANNOTATION = "infrastructure.sim.kubemedic.io/action"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
UNINITIALIZED_TAINT = {"key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule"}
MACHINES = "machines.cluster.x-k8s.io"
_ACTIONS = ("reboot", "power-off", "power-on", "delete")


@dataclass(frozen=True)
class Flavor:
    """A VM size: what the node's capacity, instance type, labels and taints will be."""

    cpu: str = "4"
    memory: str = "16Gi"
    pods: str = "110"
    ephemeral_storage: str = "100Gi"
    allocatable_cpu: str | None = None
    allocatable_memory: str | None = None
    instance_type: str = "m1.xlarge"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, str], default: Flavor) -> Flavor:
        """The flavor the autoscaler's capacity annotations describe (``default`` for the rest)."""
        labels = dict(default.labels)
        for item in filter(None, annotations.get(CAPACITY + "labels", "").split(",")):
            key, _, value = item.partition("=")
            labels[key.strip()] = value.strip()
        taints = list(default.taints)
        for item in filter(None, annotations.get(CAPACITY + "taints", "").split(",")):
            spec, _, effect = item.partition(":")
            key, _, value = spec.partition("=")
            taints.append({"key": key.strip(), "value": value.strip(), "effect": effect.strip()})
        return cls(
            cpu=annotations.get(CAPACITY + "cpu", default.cpu),
            memory=annotations.get(CAPACITY + "memory", default.memory),
            pods=annotations.get(CAPACITY + "maxPods", default.pods),
            ephemeral_storage=annotations.get(
                CAPACITY + "ephemeral-disk", default.ephemeral_storage
            ),
            instance_type=default.instance_type,
            labels=labels,
            taints=tuple(taints),
        )


@dataclass
class VM:
    """One instance: ``state`` goes provisioning -> running -> deleting -> deleted."""

    namespace: str
    machine: str
    name: str
    flavor: Flavor
    zone: str
    created: float
    provider_id: str = ""
    address: str = ""
    state: str = "provisioning"
    registered: bool = False


@runtime_checkable
class NodeRegistrar(Protocol):
    """What registers a booted machine's Node: ``Kubelets.register``."""

    def register(self, node: Obj) -> None: ...


class Infrastructure:
    """The simulated infrastructure provider (one per cluster; shares ``hosts``)."""

    name = "infrastructure-provider"

    def __init__(
        self,
        hosts: Hosts,
        *,
        provision_seconds: float = 60.0,
        delete_seconds: float = 15.0,
        provider: str = "openstack",
        region: str = "RegionOne",
        default_flavor: Flavor | None = None,
        registrar: NodeRegistrar | None = None,
    ) -> None:
        self.hosts = hosts
        self.provision_seconds = provision_seconds
        self.delete_seconds = delete_seconds
        self.provider = provider
        self.region = region
        self.default_flavor = default_flavor or Flavor()
        self.registrar = registrar
        #: Flavors by MachineDeployment or MachineSet name.
        self.flavors: dict[str, Flavor] = {}
        self.vms: dict[tuple[str, str], VM] = {}
        #: VMs by instance (and node) name.
        self.named: dict[str, VM] = {}
        #: Called with a VM whenever its state changes (Cluster API watches its machines' VMs).
        self.listeners: list[Callable[[VM], None]] = []
        self._requests: set[tuple[str, str, str]] = set()
        self._addresses = 0

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, managers.INFRASTRUCTURE_PROVIDER)
        sim.watch(MACHINES, self._annotated)
        sim.watch("nodes", self._annotated)

    def _annotated(self, change: Change) -> None:
        annotations = change.obj.get("metadata", {}).get("annotations") or {}
        if change.type != "DELETED" and ACTION_ANNOTATION in annotations:
            meta = change.obj["metadata"]
            self._requests.add((change.store, meta.get("namespace", ""), meta["name"]))

    def sync(self) -> bool:
        """Act on annotation requests; register booted VMs whose kubelet was not there yet."""
        wrote = False
        requests, self._requests = self._requests, set()
        for store, namespace, name in sorted(requests):
            obj = self.sim.get(store, namespace, name)
            action = ((obj or {}).get("metadata", {}).get("annotations") or {}).get(
                ACTION_ANNOTATION
            )
            if obj is None or action is None:
                continue
            kind = "Machine" if store == MACHINES else "Node"
            api = "cluster.x-k8s.io/v1beta1" if kind == "Machine" else "v1"
            patch = {"metadata": {"annotations": {ACTION_ANNOTATION: None}}}
            self.client.patch(api, kind, name, patch, namespace=namespace, patch_type="merge")
            wrote = True
            if action in _ACTIONS:
                getattr(self, action.replace("-", "_"))(obj)
            else:
                log.warning("%s %s/%s: unknown action %r", kind, namespace, name, action)
        for vm in list(self.vms.values()):
            if vm.state == "running" and not vm.registered:
                wrote |= self._register(vm)
        return wrote

    # for Cluster API ---------------------------------------------------------------------------

    def vm(self, namespace: str, machine: str) -> VM | None:
        return self.vms.get((namespace, machine))

    def provision(self, machine: Mapping[str, Any]) -> VM:
        """Start the VM of ``machine`` (idempotent); it runs after ``provision_seconds``."""
        meta = machine["metadata"]
        key = (meta.get("namespace", "default"), meta["name"])
        vm = self.vms.get(key)
        if vm is not None:
            return vm
        vm = VM(
            namespace=key[0],
            machine=key[1],
            name=key[1],
            flavor=self.flavor_for(machine),
            zone=str(machine.get("spec", {}).get("failureDomain") or ""),
            created=self.sim.seconds(),
        )
        self.vms[key] = self.named[vm.name] = vm
        self.sim.after(self.provision_seconds, lambda: self._boot(vm), name="vm-provisioned")
        return vm

    def release(self, namespace: str, machine: str) -> None:
        """Delete the VM of a machine: powered off now, gone after ``delete_seconds``."""
        vm = self.vms.get((namespace, machine))
        if vm is None or vm.state in ("deleting", "deleted"):
            return
        vm.state = "deleting"
        host = self.hosts.find(vm.name)
        if host is not None:
            host.power_off()
        self.sim.after(self.delete_seconds, lambda: self._gone(vm), name="vm-deleted")
        self._notify(vm)

    def flavor_for(self, machine: Mapping[str, Any]) -> Flavor:
        labels = machine.get("metadata", {}).get("labels") or {}
        namespace = machine.get("metadata", {}).get("namespace", "default")
        for label, store in (
            ("cluster.x-k8s.io/deployment-name", "machinedeployments.cluster.x-k8s.io"),
            ("cluster.x-k8s.io/set-name", "machinesets.cluster.x-k8s.io"),
        ):
            owner = labels.get(label)
            if not owner:
                continue
            if owner in self.flavors:
                return self.flavors[owner]
            obj = self.sim.get(store, namespace, owner)
            annotations = (obj or {}).get("metadata", {}).get("annotations") or {}
            if any(k.startswith(CAPACITY) for k in annotations):
                return Flavor.from_annotations(annotations, self.default_flavor)
        return self.default_flavor

    def _boot(self, vm: VM) -> None:
        if vm.state != "provisioning":
            return
        self._addresses += 1
        vm.provider_id = f"{self.provider}:///{self._uuid()}"
        vm.address = f"10.0.{self._addresses // 250}.{self._addresses % 250 + 4}"
        vm.state = "running"
        host = self.hosts.get(vm.name)  # a fresh instance: powered on, booting
        host.powered, host.reachable, host.misconfig = True, True, ""
        host.kubelet, host.runtime = "running", "running"
        host.booting_until = self.sim.seconds() + host.boot_seconds
        host.boot_id = self._uuid()
        self._register(vm)
        self._notify(vm)

    def _register(self, vm: VM) -> bool:
        registrar = self.registrar or next(
            (c for c in self.sim.components if isinstance(c, NodeRegistrar)), None
        )
        if registrar is None:
            return False
        registrar.register(self.node_for(vm))
        vm.registered = True
        return True

    def _gone(self, vm: VM) -> None:
        vm.state = "deleted"
        self.hosts.remove(vm.name)
        if self.named.get(vm.name) is vm:
            del self.named[vm.name]
        self._notify(vm)

    def _notify(self, vm: VM) -> None:
        for listener in self.listeners:
            listener(vm)

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.sim.random.getrandbits(128), version=4))

    def node_for(self, vm: VM) -> Obj:
        """The Node a booted VM registers (the kubelet adds conditions, node info, ...)."""
        flavor = vm.flavor
        labels = {
            "kubernetes.io/hostname": vm.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": flavor.instance_type,
            "topology.kubernetes.io/region": self.region,
            **({"topology.kubernetes.io/zone": vm.zone} if vm.zone else {}),
            **flavor.labels,
        }
        capacity = {
            "cpu": flavor.cpu,
            "ephemeral-storage": flavor.ephemeral_storage,
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": flavor.memory,
            "pods": flavor.pods,
        }
        allocatable = dict(capacity)
        allocatable["cpu"] = flavor.allocatable_cpu or flavor.cpu
        allocatable["memory"] = flavor.allocatable_memory or flavor.memory
        host = self.hosts.get(vm.name)
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": vm.name,
                "labels": labels,
                "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            },
            "spec": {
                "providerID": vm.provider_id,
                "taints": [dict(UNINITIALIZED_TAINT), *(dict(t) for t in flavor.taints)],
            },
            "status": {
                "capacity": capacity,
                "allocatable": allocatable,
                "addresses": [
                    {"type": "InternalIP", "address": vm.address},
                    {"type": "Hostname", "address": vm.name},
                ],
                "nodeInfo": {"bootID": host.boot_id, "systemUUID": vm.provider_id.rsplit("/")[-1]},
            },
        }

    # power controls ----------------------------------------------------------------------------

    def host_of(self, target: Mapping[str, Any] | str) -> Host | None:
        """The host behind a Machine or Node body, or a machine or node name."""
        return self.hosts.find(self._host_name(target))

    def reboot(self, target: Mapping[str, Any] | str) -> Host | None:
        """Restart the VM's OS: new ``bootID``, daemons restarted, transient faults gone."""
        host = self.host_of(target)
        if host is not None:
            host.reboot(self.sim.seconds())
        return host

    def power_off(self, target: Mapping[str, Any] | str) -> Host | None:
        host = self.host_of(target)
        if host is not None:
            host.power_off()
        return host

    def power_on(self, target: Mapping[str, Any] | str) -> Host | None:
        host = self.host_of(target)
        if host is not None:
            host.power_on(self.sim.seconds())
        return host

    def delete(self, target: Mapping[str, Any] | str) -> None:
        """Delete the Machine behind ``target``; without one, destroy the instance and Node."""
        machine = self._machine_of(target)
        if machine is not None:
            meta = machine["metadata"]
            self.client.delete(
                "cluster.x-k8s.io/v1beta1", "Machine", meta["name"], namespace=meta["namespace"]
            )
            return
        name = self._host_name(target)
        host = self.hosts.find(name)
        if host is not None:
            host.power_off()
            self.hosts.remove(name)
        try:
            self.client.delete("v1", "Node", name)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    def _machine_of(self, target: Mapping[str, Any] | str) -> Obj | None:
        if not isinstance(target, str):
            if target.get("kind") == "Machine":
                meta = target.get("metadata", {})
                return self.sim.get(MACHINES, meta.get("namespace", ""), meta.get("name", ""))
            target = str(target.get("metadata", {}).get("name", ""))
        for vm in self.vms.values():
            if target in (vm.name, vm.machine) and vm.state != "deleted":
                return self.sim.get(MACHINES, vm.namespace, vm.machine)
        for machine in self.sim.objects(MACHINES):
            node_ref = (machine.get("status") or {}).get("nodeRef") or {}
            if target in (machine["metadata"]["name"], node_ref.get("name")):
                return machine
        return None

    def _host_name(self, target: Mapping[str, Any] | str) -> str:
        if isinstance(target, str):
            machine = self._machine_of(target)
            if machine is None:
                return target
            target = machine
        meta = target.get("metadata", {})
        if target.get("kind") == "Machine":
            node_ref = (target.get("status") or {}).get("nodeRef") or {}
            vm = self.vms.get((meta.get("namespace", ""), meta.get("name", "")))
            return str(node_ref.get("name") or (vm.name if vm else meta.get("name", "")))
        return str(meta.get("name", ""))
