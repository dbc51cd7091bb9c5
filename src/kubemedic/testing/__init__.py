"""Object builders and the incident clusters, for the tests, the benchmarks and the bundled
snapshots: ``bodies`` (minimal object bodies), ``lifelike`` (what the API server, controllers
and kubelet add to them), ``incidents`` (the incident clusters, and the generator of
``data/snapshots``); the underscored modules are its parts. Product code never imports it.

May import: :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = [
    "bodies",
    "incidents",
    "lifelike",
]
