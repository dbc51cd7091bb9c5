"""What the real API server fills in before it stores an object: the defaults of its types.

The defaults themselves are :mod:`kubemedic.model.defaults` (one copy, shared with the drift
engine, which applies them to the desired state). This module adds what only the emulator
needs: pods are defaulted on every write, and the pods of one template (or the writes of one
pod) share one spec, so a pod's defaulted spec is remembered by its JSON before.

Admission and the registry strategies run next (:mod:`kubemedic.sim.apiserver.registry.admitting`).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubemedic.model.defaults import default_object as _default_any
from kubemedic.model.defaults import default_pod as _default_pod

__all__ = ["default_object"]

Obj = dict[str, Any]

#: Pod specs as defaulted, by their JSON before: a pod's defaults depend on its spec alone, and
#: the pods of one template (or the writes of one pod) share one.
_DEFAULTED: dict[bytes, bytes] = {}
_DEFAULTED_LIMIT = 4096


def default_object(obj: Obj, *, group: str, version: str, kind: str) -> None:
    """Apply, in place, the defaults kube-apiserver 1.32 sets on ``kind`` of ``group/version``.

    :func:`kubemedic.model.defaults.default_object`, with pods remembered by their spec.
    """
    if group == "" and version == "v1" and kind == "Pod":
        _default_pod_remembered(obj)
    else:
        _default_any(obj, group=group, version=version, kind=kind)


def _default_pod_remembered(pod: Obj) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    try:
        key = orjson.dumps(spec)
    except TypeError:
        _default_pod(pod)
        return
    known = _DEFAULTED.get(key)
    if known is None:
        _default_pod(pod)
        try:
            after = orjson.dumps(pod["spec"])
        except TypeError:
            return
        if len(_DEFAULTED) >= _DEFAULTED_LIMIT:
            _DEFAULTED.clear()
        _DEFAULTED[key] = after
    elif known != key:
        pod["spec"] = orjson.loads(known)
