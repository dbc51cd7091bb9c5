"""The Kubernetes protobuf encoding of request bodies, decoded into the JSON the registry reads.

The wire contract is the upstream ``generated.proto`` field numbering, kept as tables
(:mod:`.tables`, generated from k8s.io/api and k8s.io/apimachinery v0.32.0) that a small generic
decoder (:mod:`.wire`) walks.

May import: :mod:`kubemedic.errors`; no other part of the API server.
"""

from kubemedic.sim.apiserver.protobuf.wire import (
    MAGIC,
    MEDIA_TYPE,
    ProtobufError,
    UnsupportedKind,
    decode,
)

__all__ = ["MAGIC", "MEDIA_TYPE", "ProtobufError", "UnsupportedKind", "decode"]
