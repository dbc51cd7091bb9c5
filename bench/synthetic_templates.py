"""Templating for the synthetic snapshot: the snapshot's clock, copies of templates, uids.

Building every object through ``kubemedic.testing.bodies`` would make generating a 150,000-pod
snapshot slower than scanning it, so each shape is built once and every object is a copy of it
(``orjson.loads`` of the template's bytes, a fresh deep copy), with names, uids, placement and
times varied afterwards. Uids are derived from (kind, index) only, so a snapshot is the same
bytes for the same arguments and seed.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson

Obj = dict[str, Any]
NOW = timedelta(hours=1)  # the snapshot is taken at BASE_TIME + 1h


def copier(template: Obj) -> Callable[[], Obj]:
    """A function returning a new deep copy of ``template`` each call."""
    raw = orjson.dumps(template)
    return lambda: orjson.loads(raw)


def uid(kind: str, index: int) -> str:
    """A uid shaped like the API server's (8-4-4-4-12 hex), unique per (kind, index)."""
    tag = zlib.crc32(kind.encode()) & 0xFFFF
    return f"{index:08x}-{tag:04x}-4000-8000-{index * 7919 % 16**12:012x}"
