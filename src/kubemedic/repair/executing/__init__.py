"""The executor: carries out the policy's ``act`` decisions through the Kubernetes API and the
provider, and reports each :class:`~kubemedic.repair.policy.records.Outcome` back.

May import: :mod:`kubemedic.repair.providers`, :mod:`kubemedic.repair.policy`,
:mod:`kubemedic.kube`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__: list[str] = []
