"""Names and addresses as Kubernetes generates them, derived from hashes so they are stable."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

_SAFE = "bcdfghjklmnpqrstvwxz2456789"
"""``k8s.io/apimachinery/pkg/util/rand``'s alphabet for generated names."""


def digest(*parts: str) -> bytes:
    return hashlib.sha256("/".join(parts).encode()).digest()


def kube_name(*parts: str, length: int = 5) -> str:
    """A generated-name suffix as the API server makes them (``generateName``)."""
    raw = digest("name", *parts)
    return "".join(_SAFE[byte % len(_SAFE)] for byte in raw[:length])


def pod_template_hash(*parts: str) -> str:
    """A ``pod-template-hash``: a uint32 FNV hash rendered in the safe alphabet (8-10 chars)."""
    raw = digest("hash", *parts)
    return kube_name(*parts, "hash", length=9 + raw[0] % 2)


def ip_in(prefix: str, *parts: str) -> str:
    """A stable address inside ``prefix`` (``"10.8"`` gives ``10.8.x.y``)."""
    raw = digest("ip", *parts)
    octets = prefix.count(".") + 1
    tail = [str(2 + raw[i] % 250) for i in range(4 - octets)]
    return ".".join([prefix, *tail])


def parse_stamp(text: str) -> datetime:
    """The inverse of ``bodies.stamp``."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
