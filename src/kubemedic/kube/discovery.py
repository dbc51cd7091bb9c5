"""API discovery, as kubectl does it: which resource serves each kind, in which version.

``GET /api/v1`` lists the core group's resources; ``GET /apis`` lists the groups with their
versions and preferred version; ``GET /apis/<group>/<version>`` lists a group version's
resources (fetched concurrently). Subresources (``pods/status``) are left out. A group version
that cannot be listed (an aggregated API whose backend is down answers 503, as
``metrics.k8s.io`` often does) is recorded in :attr:`Discovery.failed` and skipped, as kubectl
skips it with a warning; only a failure of ``/api/v1`` or ``/apis`` themselves is an error.

:meth:`Discovery.kind` answers "which resource is ``apps/v1`` ``Deployment``?", falling back to
the group's preferred version when the manifest names a version the server does not serve
(``autoscaling/v2beta2``), so an object in Git written for an older version is still found.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from kubemedic.kube.api import Api, ApiError, ConnectionLost, Kind

__all__ = ["Discovery", "discover"]


@dataclass
class Discovery:
    """The served kinds, by ``(apiVersion, kind)``, and each group's preferred version."""

    kinds: dict[tuple[str, str], Kind] = field(default_factory=dict)
    preferred: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def kind(self, api_version: str, kind: str) -> Kind | None:
        """The resource serving ``kind`` of ``api_version``, or of its group's preferred
        version; None when the server does not serve the kind at all."""
        found = self.kinds.get((api_version, kind))
        if found is not None:
            return found
        group = api_version.rpartition("/")[0]
        version = self.preferred.get(group)
        if version is None:
            return None
        return self.kinds.get((f"{group}/{version}" if group else version, kind))


async def discover(api: Api) -> Discovery:
    """What the API server serves (see the module docstring)."""
    found = Discovery(preferred={"": "v1"})
    core = await api.request("GET", "/api/v1")
    _add(found, "", "v1", core)
    groups = await api.request("GET", "/apis")
    versions: list[tuple[str, str]] = []
    for group in (groups or {}).get("groups") or ():
        name = str(group.get("name") or "")
        preferred = (group.get("preferredVersion") or {}).get("version")
        if preferred:
            found.preferred[name] = str(preferred)
        for item in group.get("versions") or ():
            version = str(item.get("version") or "")
            if name and version:
                versions.append((name, version))

    async def one(group: str, version: str) -> None:
        try:
            answer = await api.request("GET", f"/apis/{group}/{version}")
        except (ApiError, ConnectionLost) as error:
            found.failed[f"{group}/{version}"] = str(error)
            return
        _add(found, group, version, answer)

    await asyncio.gather(*(one(g, v) for g, v in versions))
    return found


def _add(found: Discovery, group: str, version: str, answer: Any) -> None:
    api_version = f"{group}/{version}" if group else version
    for resource in (answer or {}).get("resources") or ():
        name = str(resource.get("name") or "")
        kind = str(resource.get("kind") or "")
        if not name or not kind or "/" in name:
            continue
        found.kinds.setdefault(
            (api_version, kind),
            Kind(group, version, name, kind, namespaced=bool(resource.get("namespaced"))),
        )
