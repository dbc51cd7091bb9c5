"""The Kubernetes API emulator: an in-memory kube-apiserver 1.32 that real clients accept.

Its parts, each a layer over the ones after it (import-linter holds this):

- :mod:`.serving` (run it as a process: snapshot loaded, kubeconfig written, SIGTERM) and
  :mod:`.snapshotting` (what a ``kubectl get -o json`` of the cluster would print);
- :mod:`.server`: :class:`ApiServer` assembles storage, registry and the HTTP application;
- :mod:`.http`: request handling, watches, responses and fault injection;
- :mod:`.registry`: how a request becomes stored state (decode, default, admit, validate, write,
  read, convert, subresources, garbage collection);
- independent parts: :mod:`.fields` (server-side apply and managedFields), :mod:`.patches`
  (JSON, merge and strategic merge patches), :mod:`.tables` (``kubectl get`` columns),
  :mod:`.openapi` (OpenAPI documents and CRDs), :mod:`.storage` (etcd plus the watch cache).

May import: :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`, :mod:`kubemedic.snapshot`,
:mod:`kubemedic.output.files` (to write snapshots and kubeconfigs).
"""

from kubemedic.sim.apiserver.http.faults import FaultError, Faults, parse_assignments
from kubemedic.sim.apiserver.server import ApiServer, kubeconfig
from kubemedic.sim.apiserver.serving import ServeOptions, serve, write_kubeconfig
from kubemedic.sim.apiserver.serving import build as build_served
from kubemedic.sim.apiserver.snapshotting import SNAPSHOT_KINDS, snapshot, write_snapshot

__all__ = [
    "SNAPSHOT_KINDS",
    "ApiServer",
    "FaultError",
    "Faults",
    "ServeOptions",
    "build_served",
    "kubeconfig",
    "parse_assignments",
    "serve",
    "snapshot",
    "write_kubeconfig",
    "write_snapshot",
]
