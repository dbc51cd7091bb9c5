"""The executor: carries out the policy's ``act`` decisions through the Kubernetes API and the
provider, and reports each :class:`~kubemedic.repair.policy.records.Outcome` back.

``executor`` (``Executor``: dispatch a decision, announce it), ``announcing`` (Events on the
Node, aggregated), ``cordoning`` (cordon, uncordon, quarantine, release), ``draining`` (one
pass of evictions), ``tainting`` (the out-of-service taint). Requests to the node agent are
written by :mod:`kubemedic.repair.providers.agent`, which the ``agent`` provider shares.

May import: :mod:`kubemedic.repair.providers`, :mod:`kubemedic.repair.policy`,
:mod:`kubemedic.kube`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = ["announcing", "cordoning", "draining", "executor", "tainting"]
