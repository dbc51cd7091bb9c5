"""OpenAPI v2/v3 documents as kube-apiserver serves them, and the CustomResourceDefinitions the
emulator announces (Cluster API's, Argo CD's Application, Flux's GitRepository and
Kustomization).

May import: :mod:`kubemedic.sim.machinery`; no other part of the API server.
"""

from kubemedic.sim.apiserver.openapi.documents import OpenAPI

__all__ = ["OpenAPI"]
