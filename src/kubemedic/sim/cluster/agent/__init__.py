"""kubemedic's node agent on every simulated node: the conditions it reports and the requests
of the repair controller it carries out (the contract of docs/repair.md).

- the names of the contract (conditions, annotations, field managers, event reasons) and the
  pure decision whether a request may be carried out are :mod:`kubemedic.model.agentcontract`,
  shared with the real agent (:mod:`kubemedic.agent`);
- :mod:`.agents`: :class:`NodeAgents`, the component (one agent process per node, next to the
  kubelet), with its per-node :class:`AgentSettings` (the optional self-repair mode).

May import: :mod:`kubemedic.sim.cluster.runtime`, :mod:`kubemedic.sim.apiserver` (types),
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other component group.
"""

from kubemedic.sim.cluster.agent.agents import AgentSettings, NodeAgents

__all__ = ["AgentSettings", "NodeAgents"]
