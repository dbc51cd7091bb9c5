"""Validating admission webhooks called as kube-apiserver calls them.

:mod:`.matching` decides which webhooks of the stored ``ValidatingWebhookConfiguration`` objects
a request goes to (rules, scope, namespace and object selectors, ``matchPolicy``);
:mod:`.calling` builds the ``admission.k8s.io/v1`` ``AdmissionReview``, posts it over HTTPS and
turns the answer into warnings or the refusal the real server words.

It knows nothing of storage: the registry's writer hands it the configurations and a way to read
a namespace's labels.

May import: :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`, the standard library.
"""

from kubemedic.sim.apiserver.webhooks.calling import ADMIN_USER, Attributes, dispatch
from kubemedic.sim.apiserver.webhooks.matching import EXEMPT_RESOURCES

__all__ = ["ADMIN_USER", "EXEMPT_RESOURCES", "Attributes", "dispatch"]
