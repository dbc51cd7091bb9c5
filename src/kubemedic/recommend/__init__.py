"""Right-sizing from history: requests and limits per workload container, from the archive's
usage samples, OOM kills and evictions (``kubemedic recommend``; docs/recommend.md).

``recommend.policy`` is the pure rule (Robusta KRR's ``simple`` strategy, never below a peak
that ended in an OOM kill or an eviction, "not enough data" below a minimum history);
``recommend.current`` reads a workload's current requests and limits from a cluster view (a
snapshot or a live scan); ``recommend.archived.recommend_from_archive`` gathers an archive's
samples, kills and specs per workload container and applies the policy.

May import: :mod:`kubemedic.store`, :mod:`kubemedic.incidents` (a pod's workload, as incidents
name it), :mod:`kubemedic.model`, :mod:`kubemedic.errors`; ``recommend.policy`` and
``recommend.current`` do no I/O (an import-linter contract). The package sits in the layer over
the adapters, beside the storm breaker, since it reads the incidents package's workload names.
"""

__all__ = ["archived", "current", "policy", "rendering"]
