"""Server-side printing: the ``meta.k8s.io`` ``Table`` the real API server answers to kubectl.

``kubectl get`` does not format objects itself. It sends ``Accept:
application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,
application/json`` (:func:`negotiate_table`) and prints the columns and cells the server
computed, so a pod's STATUS, its RESTARTS and every AGE are decided on the server
(:mod:`kubemedic.sim.apiserver.tables.printing`, :mod:`kubemedic.sim.apiserver.tables.columns`,
:mod:`kubemedic.sim.apiserver.tables.aging`). The server always renders the wide variant
(``GenerateOptions{Wide: true}``); the ``priority: 1`` columns are the ones kubectl hides without
``-o wide``.

Each row carries ``object``: by default (``includeObject`` absent or ``Metadata``) a
``PartialObjectMetadata`` holding the whole ``metadata`` (kubectl reads labels and namespace from
it), the full object for ``Object`` (kubectl asks for it with ``--sort-by``), ``null`` for
``None``. The table's ``metadata`` is the list's ``resourceVersion``/``continue`` (the object's
``resourceVersion`` for a single GET). On a watch the first event carries the column
definitions and later ones omit them (``no_headers``).

Kinds without a built-in printer are rendered the way the CRD handler renders a custom resource
without ``additionalPrinterColumns``: ``Name`` and an ``Age`` column of type ``date``, computed
from ``.metadata.creationTimestamp`` (``printer_columns`` passes a CRD's own columns; simple
JSONPaths with ``[n]`` and ``[?(@.k=="v")]`` are supported). ``metrics.k8s.io`` follows
metrics-server's table (usage per resource, ``Window``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kubemedic.model.quantities import Quantity, QuantityError
from kubemedic.sim.apiserver.tables import aging, columns, printing
from kubemedic.sim.machinery import errors, naming

__all__ = [
    "accepts_table",
    "include_object_from",
    "negotiate_table",
    "table",
]

Obj = Mapping[str, Any]
Row = dict[str, Any]

# ---------------------------------------------------------------- negotiation


def negotiate_table(accept: str | None) -> str | None:
    """The ``apiVersion`` of the Table to answer (``meta.k8s.io/v1`` or ``/v1beta1``), or None
    when the first acceptable ``Accept`` clause (by ``q``, then order) is not a Table."""
    clauses: list[tuple[float, int, str, dict[str, str]]] = []
    for index, raw in enumerate((accept or "").split(",")):
        kind, *params = (part.strip() for part in raw.split(";"))
        options = dict(p.partition("=")[::2] for p in params)
        try:
            q = float(options.pop("q", "1"))
        except ValueError:
            q = 1.0
        clauses.append((-q, index, kind.lower(), options))
    for _, _, kind, options in sorted(clauses):
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        if "as" not in options:
            return None
        table = options["as"] == "Table" and options.get("g") == "meta.k8s.io"
        if table and options.get("v") in ("v1", "v1beta1"):
            return f"meta.k8s.io/{options['v']}"
    return None


def accepts_table(accept: str | None) -> bool:
    """True when the request asks for server-side printing."""
    return negotiate_table(accept) is not None


def include_object_from(query: Mapping[str, str]) -> str:
    """``includeObject`` from the query: ``Metadata`` (default), ``Object`` or ``None``."""
    value = query.get("includeObject", "")
    if value in ("", "Metadata"):
        return "Metadata"
    if value in ("Object", "None"):
        return value
    raise errors.bad_request(f"unrecognized includeObject value: {naming.go_quote(value)}")


# ---------------------------------------------------------------- custom resources and metrics

_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)\]""")


def _jsonpath(obj: Any, path: str) -> Any:
    """The first result of a simple JSONPath (``.a.b``, ``[0]``, ``[?(@.type=="Ready")]``)."""
    for match in _STEP.finditer(path.strip().removeprefix("{").removesuffix("}")):
        name, index, key, wanted = match.groups()
        if name is not None:
            obj = obj.get(name) if isinstance(obj, Mapping) else None
        elif index is not None:
            obj = obj[int(index)] if isinstance(obj, list) and int(index) < len(obj) else None
        else:
            items = obj if isinstance(obj, list) else []
            obj = next((i for i in items if str(_jsonpath(i, "." + key)) == wanted), None)
        if obj is None:
            return None
    return obj


def _custom_cell(kind: str, value: Any, now: datetime) -> Any:
    """``cellForJSONValue`` / jsonpath printing of one CRD printer column value."""
    if value is None:
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, dict | list):
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        return str(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        when = aging.parse_time(value)
        return "<invalid>" if when is None else aging.human_duration(now - when)
    return None


def _custom(
    printer_columns: Sequence[Mapping[str, Any]] | None,
) -> tuple[list[dict[str, Any]], Callable[[Obj, datetime], list[Any]]]:
    declared = list(printer_columns or ())
    if not declared:
        declared = [
            {
                "name": "Age",
                "type": "date",
                "description": columns.description("ObjectMeta.creationTimestamp"),
                "jsonPath": ".metadata.creationTimestamp",
            }
        ]
    definitions = [columns.column(*columns.NAME)]
    for c in declared:
        desc = c.get("description") or (
            f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}"
        )
        definitions.append(
            columns.column(
                str(c["name"]),
                str(c.get("type", "string")),
                desc,
                int(c.get("priority", 0)),
                str(c.get("format", "")),
            )
        )

    def cells(obj: Obj, now: datetime) -> list[Any]:
        values = [
            _custom_cell(str(c.get("type")), _jsonpath(obj, str(c.get("jsonPath", ""))), now)
            for c in declared
        ]
        return [printing.dig(obj, "metadata", "name") or "", *values]

    return definitions, cells


def _metrics_table(objects: Sequence[Obj]) -> tuple[list[dict[str, Any]] | None, list[Row]]:
    """metrics-server's tables: usage per resource name (pods summed over containers)."""
    names: list[str] | None = None
    headers: list[dict[str, Any]] | None = None
    rows: list[Row] = []
    for obj in objects:
        usage: dict[str, Quantity] = {}
        if "containers" in obj:
            parts = [c.get("usage") or {} for c in obj.get("containers") or []]
        else:
            parts = [obj.get("usage") or {}]
        for part in parts:
            for key, text in part.items():
                try:
                    quantity = Quantity.parse(str(text))
                except QuantityError:
                    continue
                usage[key] = usage[key] + quantity if key in usage else quantity
        if names is None:
            names = sorted(usage)
            headers = [columns.column("Name", "string", "Name of the resource", fmt="name")]
            headers += [columns.column(n, "string", "", fmt="quantity") for n in names]
            headers.append(columns.column("Window", "string", "", fmt="duration"))
        cells = [printing.dig(obj, "metadata", "name") or ""]
        cells += [usage[n].canonical() if n in usage else "0" for n in names]
        rows.append({"cells": [*cells, str(obj.get("window", "0s"))]})
    return headers, rows


# ---------------------------------------------------------------- the table


def table(
    resource_plural: str,
    group: str,
    objects: Sequence[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any],
    api_version: str = "meta.k8s.io/v1",
    no_headers: bool = False,
    printer_columns: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``Table`` for ``objects`` of a resource, as ``GET``/``LIST`` answer it.

    ``list_meta`` gives the list's ``resourceVersion``/``continue``/``remainingItemCount`` (the
    object's ``resourceVersion`` for a single GET); ``now`` is the server clock ages count from;
    ``api_version`` is what :func:`negotiate_table` chose; ``printer_columns`` are a CRD's
    ``additionalPrinterColumns`` (only used for kinds without a built-in printer).
    """
    headers: Sequence[dict[str, Any]] | None
    rows = printing.rows(group, resource_plural, objects, now=now)
    if rows is not None:
        headers = columns.for_resource((group, resource_plural))
    elif group == "metrics.k8s.io":
        headers, rows = _metrics_table(objects)
    else:
        headers, custom_cells = _custom(printer_columns)
        rows = [{"cells": custom_cells(o, now)} for o in objects]
    for obj, row in zip(objects, rows, strict=True):
        if include_object == "Object":
            row["object"] = obj
        elif include_object == "None":
            row["object"] = None
        else:
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata") or {},
            }
    meta = {
        k: list_meta[k]
        for k in ("resourceVersion", "continue", "remainingItemCount")
        if list_meta.get(k) not in (None, "")
    }
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": meta,
        "columnDefinitions": None if no_headers or headers is None else list(headers),
        "rows": rows if rows or group != "metrics.k8s.io" else None,
    }
