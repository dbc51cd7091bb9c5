"""``kubemedic guard``: a validating admission webhook that prevents what ``drift`` detects.

It answers kube-apiserver's ``admission.k8s.io/v1`` AdmissionReviews over TLS: a warning (which
kubectl prints) or, with policy ``deny``, a refusal when an imperative manager (``kubectl
edit``, ``kubectl patch``...) changes an object a GitOps tool manages; always a warning when a
workload template gains a ``nodeName`` whose node cannot hold its replicas (incident 1). It
fails open. docs/guard.md is the operator's guide.

- :mod:`.policy`: the verdict on one request (pure);
- :mod:`.render`: the ``ValidatingWebhookConfiguration`` (pure);
- :mod:`.certs`: the authority and serving certificate, kept in a directory;
- :mod:`.caching`: nodes and pods, listed and watched; :mod:`.serving`: the HTTPS server and
  the process; :mod:`.settings`: the configuration's ``guard:`` section.

May import: :mod:`kubemedic.drift` (manager classes), :mod:`kubemedic.checks` (GitOps markers,
the ``pinned-node-name`` arithmetic), :mod:`kubemedic.model`, :mod:`kubemedic.errors` (the pure
parts); :mod:`kubemedic.kube` and :mod:`kubemedic.config` (caching, serving, settings); never
the simulator or test support.
"""

from kubemedic.guard.policy import (
    AdmissionRequest,
    GuardSettings,
    Outcome,
    Policy,
    ReviewError,
    Verdict,
    decide,
    parse_review,
)
from kubemedic.guard.render import render_configuration

__all__ = [
    "AdmissionRequest",
    "GuardSettings",
    "Outcome",
    "Policy",
    "ReviewError",
    "Verdict",
    "decide",
    "parse_review",
    "render_configuration",
]
