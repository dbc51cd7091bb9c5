"""The simulator: a Kubernetes API emulator and cluster behaviour (test bed and demo only).

Product code never imports this package; only the ``sim`` and ``demo`` commands, the tests and
the benchmarks do, through the public faces of its four layers, each importing only the ones
below it (import-linter holds this):

- :mod:`.scenarios`: the incidents as YAML timelines, node pools, large-cluster generators and
  host faults, played on a simulated cluster;
- :mod:`.cluster`: the runtime (engine on a virtual clock, in-process client, hosts, event
  recorders) and the components in independent groups: controllers, scheduler, kubelet,
  Cluster API with infrastructure and autoscaler, metrics-server;
- :mod:`.apiserver`: the API emulator (HTTP layer, registry, storage, server-side apply and
  managed fields, patches, tables, OpenAPI and CRDs);
- :mod:`.machinery`: what every layer speaks: object types, status errors, the clock, names,
  label and field selectors, API resources and the OpenAPI definitions.

May import: :mod:`kubemedic.model`, :mod:`kubemedic.snapshot` (to serve snapshots) and
:mod:`kubemedic.output.files` (to write them atomically), never
the rest of the product.
"""
