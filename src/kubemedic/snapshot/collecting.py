"""From the parsed documents of a snapshot file to the objects kubemedic keeps, and the check of
the quantities in those it judges.

A document is one Kubernetes object, a ``List`` (``kubectl get -o json`` of several kinds) or a
typed list as the REST API returns it (``PodList``, whose items may carry no ``kind``: it is taken
from the list). Anything else is refused, naming the file, the document (and its line, for YAML)
and the item: a document that is not an object (``null``, a number, a list), an object with no
``kind``, ``items`` that are not a list, or ``items`` in an object whose kind is not a list kind
(its objects would otherwise be silently lost). Objects of kinds kubemedic does not use are
counted, not kept.

Quantities in the objects the checks read (container requests/limits and pod overhead of pods
and of every workload's pod template, node capacity/allocatable, PodMetrics and NodeMetrics
usage) are validated too: the API server would have refused an invalid one, so it marks a
damaged or hand-edited file. Reported with the file, object and field path, it ends the scan
(instead of turning a check off, so that a ``--fail-on`` gate would pass).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubemedic.model import objects, resources
from kubemedic.model.documents import value_kind
from kubemedic.model.owners import POD_TEMPLATE_SPECS
from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.model.view import KNOWN_KINDS
from kubemedic.snapshot.reading import SnapshotError

__all__ = ["collect", "validate"]


def _named(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return "an object"
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    key = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    return f"object {key[:200]!r}"


def collect(
    document: Any,
    *,
    file: Path,
    place: str,
    kept: list[dict[str, Any]],
    unknown: Counter[str],
    list_kind: str | None = None,
    item: str = "",
) -> int:
    """Keep the objects of ``document`` in ``kept`` (kinds kubemedic does not use: counted in
    ``unknown``); how many objects it held. ``place`` says where the document is in ``file``
    (``"document 2 (line 14): "`` or ``""``), ``item`` which of a list's items it is."""
    here = f"{file}: {place}{item}: " if item else f"{file}: {place}"
    if not isinstance(document, dict | Mapping):
        wanted = "a Kubernetes object" if item else "a Kubernetes object or List"
        raise SnapshotError(f"{here}expected {wanted}, found {value_kind(document)}")
    kind = document.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise SnapshotError(f"{here}kind: expected a string such as Pod, found {value_kind(kind)}")
    if "items" in document and (not kind or kind.endswith("List") or kind not in KNOWN_KINDS):
        if not kind:
            raise SnapshotError(
                f"{here}{_named(document)} with items but no kind: expected kind: List "
                "(or a typed list such as PodList)"
            )
        if not kind.endswith("List"):
            raise SnapshotError(
                f"{here}kind {kind[:200]!r} holds items, but only a list does: expected "
                "kind: List (or a typed list such as PodList)"
            )
        items = document["items"]
        if items is None:  # a nil list, as Go encodes it
            return 0
        if not isinstance(items, list):
            raise SnapshotError(
                f"{here}items: expected a list of objects, found {value_kind(items)}"
            )
        item_kind = kind[: -len("List")] if kind != "List" else None
        keep = kept.append
        total = 0
        for index, entry in enumerate(items):
            # The common case first, without a call: an object that says its kind, or takes it
            # from its typed list. Anything else is the general case below (and its errors).
            if type(entry) is dict and "items" not in entry:
                entry_kind = entry.get("kind") or item_kind
                if type(entry_kind) is str:
                    if entry_kind in KNOWN_KINDS:
                        body = objects.LoadedBody(entry)
                        body["kind"] = entry_kind
                        keep(body)
                    else:
                        unknown[entry_kind[:200]] += 1
                    total += 1
                    continue
            total += collect(
                entry,
                file=file,
                place=place,
                kept=kept,
                unknown=unknown,
                list_kind=item_kind,
                item=f"{item}.items[{index}]" if item else f"items[{index}]",
            )
        return total
    if not kind:
        if list_kind is None:
            raise SnapshotError(
                f"{here}{_named(document)} with no kind: expected a Kubernetes object "
                "(kind: Pod, Node, ...) or List"
            )
        kind = list_kind
    if kind not in KNOWN_KINDS:
        unknown[kind[:200]] += 1
        return 1
    body = objects.LoadedBody(document)
    body["kind"] = kind
    kept.append(body)
    return 1


_TEMPLATE_PREFIXES = {kind: ".".join(path[:-1]) + "." for kind, path in POD_TEMPLATE_SPECS.items()}
"""Where each workload's pod template sits, for field paths: ``spec.template.``,
``spec.jobTemplate.spec.template.``."""


def validate(body: Mapping[str, Any], *, file: Path) -> None:
    """Refuse an invalid quantity among those the checks read, naming ``file``, the object and
    the field."""
    try:
        kind = body.get("kind")
        if kind == "Pod":
            resources.pod_requests(body)
            resources.pod_limits(body)
        elif kind == "Node":
            resources.node_allocatable(body)
            resources.node_capacity(body)
        elif kind in _TEMPLATE_PREFIXES:
            path = POD_TEMPLATE_SPECS[kind]
            template = {
                "kind": kind,
                "metadata": objects.get_map(body, "metadata"),
                "spec": objects.get_map(body, *path),
            }
            resources.pod_requests(template, prefix=_TEMPLATE_PREFIXES[kind])
            resources.pod_limits(template, prefix=_TEMPLATE_PREFIXES[kind])
        elif kind == "PodMetrics":
            _pod_metrics(body)
        elif kind == "NodeMetrics":
            _usage(objects.get_map(body, "usage"), where=f"NodeMetrics {_key(body)} usage")
    except QuantityError as error:
        raise SnapshotError(f"{file}: {error}") from None


def _key(body: Mapping[str, Any]) -> str:
    meta = objects.get_map(body, "metadata")
    namespace, name = meta.get("namespace"), meta.get("name")
    name = name if isinstance(name, str) else "?"
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def _pod_metrics(body: Mapping[str, Any]) -> None:
    """A PodMetrics' ``containers[name=x].usage``, as the checks sum it."""
    key = _key(body)
    for entry in objects.get_list(body, "containers"):
        name = objects.get_str(entry, "name") or "?"
        _usage(
            objects.get_map(entry, "usage"),
            where=f"PodMetrics {key} containers[name={name}].usage",
        )


def _usage(usage: Mapping[str, Any], *, where: str) -> None:
    for resource, value in usage.items():
        parse_quantity(value, where=f"{where}.{resource}")
