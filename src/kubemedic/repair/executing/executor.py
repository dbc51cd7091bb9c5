"""The executor: one ``act`` decision in, one :class:`Outcome` out.

The controller hands every decision of a round to :meth:`Executor.announce` (an Event on the
Node) and each ``act`` decision to :meth:`Executor.execute`, then folds the outcome back into
the policy. ``execute`` never raises for what the cluster or the provider answered: a refused
or failed action is ``Outcome(ok=False, detail=...)`` with the reason in a sentence, so the
policy decides what happens next (wait, retry next round, escalate).

What each action does, and the ``args`` it reads:

==================  ===========================================================================
restart-kubelet,    a request to the node agent (``kubemedic.io/agent-request``); ``args
restart-runtime     ["id"]`` is its id (one is made otherwise); ``data["id"]`` the id
cordon              ``spec.unschedulable``, and ``kubemedic.io/repair`` (``args["step"]``,
                    ``args["phase"]``); ``data["cordoned"]`` is ``false`` when it was already
drain              one pass (:mod:`.draining`); ``args["delete_classes"]``: classes of pods
                    to delete instead of evict (after the drain timeout); ``args["delete"]``:
                    ``ns/name,...`` likewise; ``args["unreachable"] == "true"``: the node
                    does not post its status.
                    ``ok`` when nothing is left; ``data``: ``state``, ``remaining``,
                    ``blocking``, ``budgets``...
reboot, power-on    the provider; ``data["boot_id"]``: the bootID before the reboot
replace             the provider when it replaces, else Cluster API (delete the Machine;
                    ``args["machine"]`` ``ns/name`` and ``args["owner"]`` when not observed)
fence, unfence      the out-of-service taint
uncordon            refused on a quarantined node
quarantine          cordon, label and annotate; ``args["reason"]`` (else the message)
alert               nothing beyond the Event that :meth:`announce` writes
==================  ===========================================================================

**Dry run** (the executor's, or the decision's ``dry_run``): nothing is written to the cluster
and no provider is called; ``execute`` answers ``Outcome(ok=True, detail="dry run")``. Events
are still written (with the message ``dry run: would ...``): with the ledger, they are how a dry
run reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kubemedic.kube.api import Api, ApiError, ConnectionLost, NotFound
from kubemedic.repair.executing import cordoning, draining, tainting
from kubemedic.repair.executing.announcing import Announcer
from kubemedic.repair.policy.records import (
    Action,
    Decision,
    Kind,
    MachineRef,
    NodeObservation,
    Outcome,
    Power,
)
from kubemedic.repair.providers import agent, clusterapi, contract
from kubemedic.repair.providers.base import Provider, ProviderError, Target

__all__ = ["Executor", "target_of", "target_of_node"]

LOG = logging.getLogger("kubemedic.repair")

DRY_RUN = "dry run"
_AGENT_ACTIONS = frozenset({Action.RESTART_KUBELET, Action.RESTART_RUNTIME})

# The annotations the Cluster API machine controller puts on the Nodes of its Machines.
_CAPI_MACHINE = "cluster.x-k8s.io/machine"
_CAPI_NAMESPACE = "cluster.x-k8s.io/cluster-namespace"
_CAPI_OWNER_KIND = "cluster.x-k8s.io/owner-kind"
_CAPI_OWNER_NAME = "cluster.x-k8s.io/owner-name"


def target_of(node: NodeObservation) -> Target:
    """The provider's target for an observed node."""
    return Target(node=node.name, provider_id=node.provider_id, machine=node.machine)


def target_of_node(body: Mapping[str, Any]) -> Target:
    """The provider's target for a Node body: ``spec.providerID``, and the Cluster API
    Machine named by the annotations its machine controller writes."""
    meta = body.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    machine = None
    if annotations.get(_CAPI_MACHINE):
        kind, name = annotations.get(_CAPI_OWNER_KIND), annotations.get(_CAPI_OWNER_NAME)
        machine = MachineRef(
            namespace=str(annotations.get(_CAPI_NAMESPACE) or "default"),
            name=str(annotations[_CAPI_MACHINE]),
            owner=f"{kind}/{name}" if kind and name else "",
        )
    return Target(
        node=str(meta.get("name") or ""),
        provider_id=str((body.get("spec") or {}).get("providerID") or ""),
        machine=machine,
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Executor:
    """Carries out ``act`` decisions through the Kubernetes API and the provider."""

    def __init__(
        self,
        *,
        api: Api,
        provider: Provider,
        identity: str,
        dry_run: bool = True,
        now: Callable[[], datetime] = _utc_now,
        replacer: Provider | None = None,
    ) -> None:
        """``replacer`` replaces machines when ``provider`` cannot (default: Cluster API)."""
        self.api = api
        self.provider = provider
        self.identity = identity
        self.dry_run = dry_run
        self.now = now
        self.replacer = replacer
        self.announcer = Announcer(api=api, identity=identity, now=now)

    def is_dry_run(self, decision: Decision) -> bool:
        return self.dry_run or decision.dry_run

    async def announce(self, decision: Decision, outcome: Outcome | None = None) -> None:
        """The Event of ``decision`` on its Node (aggregated while it repeats); with
        ``outcome``, a failed action's reason is added to the message. In a dry run the
        message says what would have been done. An Event the API refuses is logged: it is
        never worth failing a round for."""
        message = decision.message
        if outcome is not None and not outcome.ok and outcome.detail:
            message = f"{message}: failed: {outcome.detail}"
        if self.is_dry_run(decision) and not message.startswith(DRY_RUN):
            if decision.kind == Kind.ACT and decision.action is not None:
                message = f"{DRY_RUN}: would {decision.action.value}: {message}"
            else:
                message = f"{DRY_RUN}: {message}"
        try:
            await self.announcer.announce(decision, message=message, outcome=outcome)
        except (ApiError, ConnectionLost) as exc:
            LOG.warning("no Event for %s on %s: %s", decision.reason, decision.node, exc)

    async def power(self, target: Target) -> Power:
        """The machine's power as the provider tells it; ``UNKNOWN`` when it cannot."""
        try:
            return await self.provider.power(target)
        except ProviderError as exc:
            LOG.warning("%s", exc)
            return Power.UNKNOWN

    async def execute(
        self,
        decision: Decision,
        node: NodeObservation | None = None,
        *,
        target: Target | None = None,
    ) -> Outcome:
        """Carry out one ``act`` decision (``ValueError`` for any other kind). The machine is
        ``target``, else the observed ``node``'s (:func:`target_of`), else read from the Node
        (and the decision's ``machine``/``owner`` arguments)."""
        action = decision.action
        if decision.kind != Kind.ACT or action is None or not decision.node:
            raise ValueError(f"not an act decision on a node: {decision.kind} {decision.reason}")
        if self.is_dry_run(decision):
            return Outcome(action, ok=True, detail=DRY_RUN, data={"dry_run": "true"})
        if target is None and node is not None:
            target = target_of(node)
        try:
            return await self._act(action, decision, decision.node, target)
        except (ProviderError, cordoning.ExecutingError, ApiError, ConnectionLost) as exc:
            return Outcome(action, ok=False, detail=str(exc))

    async def _act(
        self, action: Action, decision: Decision, node: str, target: Target | None
    ) -> Outcome:
        args = decision.args
        if action in _AGENT_ACTIONS:
            request = await agent.write_request(
                self.api,
                node,
                action=action.value,
                requester=self.identity,
                now=self.now(),
                request_id=args.get("id") or args.get("request", ""),
            )
            detail = f"asked the node agent on {node} to {action.value} (request {request.id})"
            data = {"id": request.id, "request": request.id}
            return Outcome(action, ok=True, detail=detail, data=data)
        if action == Action.CORDON:
            mark = None
            if decision.repair:
                mark = cordoning.RepairMark(
                    decision.repair, args.get("step", "reboot"), args.get("phase", "cordon"),
                    self.now(),
                )  # fmt: skip
            done = await cordoning.cordon(self.api, node, mark=mark)
            detail = f"cordoned node {node}" if done.changed else f"node {node} was cordoned"
            return Outcome(action, ok=True, detail=detail, data={"cordoned": _flag(done.changed)})
        if action == Action.UNCORDON:
            await cordoning.uncordon(self.api, node)
            return Outcome(action, ok=True, detail=f"uncordoned node {node}")
        if action == Action.QUARANTINE:
            reason = args.get("reason") or decision.message
            await cordoning.quarantine(self.api, node, reason=reason)
            return Outcome(action, ok=True, detail=f"quarantined node {node}: {reason}")
        if action == Action.DRAIN:
            result = await draining.drain(
                self.api,
                node,
                delete=draining.parse_pod_list(args.get("delete", "")),
                delete_classes=draining.parse_classes(args.get("delete_classes", "")),
                node_down="true" in (args.get("unreachable"), args.get("node_down")),
            )
            return Outcome(action, ok=result.done, detail=result.detail(), data=result.data())
        if action == Action.FENCE:
            added = await tainting.fence(self.api, node, now=self.now())
            detail = f"tainted node {node} out-of-service" if added else "already tainted"
            return Outcome(action, ok=True, detail=detail, data={"changed": _flag(added)})
        if action == Action.UNFENCE:
            removed = await tainting.unfence(self.api, node)
            detail = f"removed the out-of-service taint of {node}" if removed else "not tainted"
            return Outcome(action, ok=True, detail=detail, data={"changed": _flag(removed)})
        if action == Action.ALERT:
            return Outcome(action, ok=True, detail="announced")
        return await self._machine(action, decision, node, target)

    async def _machine(
        self, action: Action, decision: Decision, node: str, target: Target | None
    ) -> Outcome:
        """Reboot, power on or replace through a provider."""
        try:
            body = await contract.get_node(self.api, node)
        except NotFound:
            body = {"metadata": {"name": node}}  # a Machine may outlive its Node
        if target is None:
            target = target_of_node(body)
        if target.machine is None and decision.args.get("machine"):
            namespace, _, name = decision.args["machine"].rpartition("/")
            machine = MachineRef(namespace or "default", name, owner=decision.args.get("owner", ""))
            target = Target(target.node, target.provider_id, machine)
        if action == Action.REPLACE:
            replacer = self._replacer()
            said = await replacer.replace(target)
            return Outcome(action, ok=True, detail=said, data={"provider": replacer.name})
        if action not in self.provider.actions:
            raise ProviderError(f"node {node}: provider {self.provider.name} cannot {action.value}")
        boot_id = str(((body.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
        if action == Action.REBOOT:
            said = await self.provider.reboot(target)
        elif action == Action.POWER_ON:
            said = await self.provider.power_on(target)
        else:
            raise ValueError(f"the executor has no action {action.value!r}")
        data = {"boot_id": boot_id, "provider": self.provider.name}
        return Outcome(action, ok=True, detail=said, data=data)

    def _replacer(self) -> Provider:
        if Action.REPLACE in self.provider.actions:
            return self.provider
        if self.replacer is None:
            self.replacer = clusterapi.ClusterApiProvider(api=self.api)
        return self.replacer

    async def close(self) -> None:
        await self.provider.close()
        if self.replacer is not None and self.replacer is not self.provider:
            await self.replacer.close()


def _flag(value: bool) -> str:
    return "true" if value else "false"
