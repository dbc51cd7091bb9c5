"""The storm breaker: stop a Failed-pod storm while it happens, inside ``kubemedic run``.

A workload whose pods the kubelet rejects at admission (``OutOfmemory``, ``NodeAffinity``...,
incident 1) is recreated by its controller without backoff, thousands of Failed pods an hour.
The breaker detects the churn per owner, predicts it from a pinned template ``nodeName``, and acts
by policy: ``alert``, ``revert-out-of-band``, ``scale-to-fit``, ``prune-failed``. docs/breaker.md
is the operator's description.

``breaker.policy`` is the pure part (observations in, decisions out).

May import: :mod:`kubemedic.drift` (the out-of-band fields and their revert),
:mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; ``breaker.policy`` does
no I/O (an import-linter contract). The package sits in its own layer over the adapters, since it
reads the drift engine's results.
"""

__all__ = ["policy"]
