"""What every component runs on: the engine, the in-process client, hosts, usage and events.

May import: :mod:`kubemedic.sim.apiserver`, :mod:`kubemedic.sim.machinery`,
:mod:`kubemedic.model`; no component group.
"""

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Component, Simulation, Timer
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.cluster.runtime.recording import EventRecorder

__all__ = ["Client", "Component", "EventRecorder", "Host", "Hosts", "Simulation", "Timer"]
