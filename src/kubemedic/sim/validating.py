"""What the real API server refuses: unknown fields when decoding, invalid objects when storing.

Two checks, at two moments of a write, with two kinds of answer:

* **Field validation**, while decoding the body (:func:`unknown_fields`). Typed objects are
  decoded into Go structs, so a field the type does not have is *unknown* and a key written
  twice is a *duplicate*; the strict decoder reports both with the field's full path, in
  document order (``unknown field "spec.template.spec.containers[0].bad"``). With
  ``fieldValidation=Strict`` (what kubectl sends) they make a 400 (:func:`strict_error`); with
  ``Warn`` they become warnings and the fields are dropped (:func:`prune_unknown`), as with
  ``Ignore``. Inside free-form values (``RawExtension``, ``fieldsV1``) and schemaless custom
  resources everything is accepted; ``metadata`` is always an ``ObjectMeta`` and is checked.
  A custom resource's duplicates come first, then its unknown fields, as the unstructured
  decoder and the pruner report them. Values the decoder cannot convert (a quantity that is not
  one, a string where a number belongs) also fail here, with a 400 (:func:`decoding_error`).
* **Validation**, after defaulting (:func:`validate`): the registry's ``Validate`` and
  ``ValidateUpdate`` rules for the kinds the emulator serves, as ``StatusCause``\\ s worded
  exactly as ``k8s.io/apimachinery/pkg/util/validation/field`` words them (``Required value``,
  ``Invalid value: "x": ...``, ``Unsupported value: "x": supported values: "a", "b"``). The
  server answers them with a 422 ``Invalid``. Values are printed the way Go's ``%#v`` prints
  them, since clients and people match on these strings.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim import defaulting, errors
from kubemedic.sim.errors import Cause
from kubemedic.sim.schema import SchemaNode, definitions

__all__ = [
    "decoding_error",
    "prune_unknown",
    "strict_error",
    "unknown_fields",
    "validate",
]

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


# -- field validation (decoding) ----------------------------------------------------------------


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as written: its keys in order, repeated keys kept."""


def unknown_fields(obj: Any, schema: SchemaNode | None, *, raw: bytes | None = None) -> list[str]:
    """The strict decoder's complaints about ``obj``: unknown fields, and duplicate keys of
    ``raw`` (the request body) when it is given and is JSON."""
    body: Any = obj
    if raw is not None:
        try:
            body = json.loads(raw, object_pairs_hook=_Pairs)
        except (ValueError, UnicodeDecodeError):
            body = obj
    found: dict[str, None] = {}
    if schema is None:
        _duplicates_anywhere(body, "", found)
        meta = dict(_items(body)).get("metadata")
        _walk(meta, definitions().node(_OBJECT_META), "metadata", found, duplicates=False)
    else:
        _walk(body, schema, "", found, duplicates=True)
    return list(found)


def _items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, _Pairs):
        return list(value)
    if isinstance(value, dict):
        return list(value.items())
    return []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(
    value: Any, node: SchemaNode, path: str, found: dict[str, None], *, duplicates: bool
) -> None:
    if node.kind == "struct" and isinstance(value, dict | _Pairs):
        seen: set[str] = set()
        for key, item in _items(value):
            child = node.field(key)
            where = _join(path, key)
            if child is None:
                found.setdefault(f'unknown field "{where}"')
                continue
            if key in seen and duplicates:
                found.setdefault(f'duplicate field "{where}"')
            seen.add(key)
            _walk(item, child, where, found, duplicates=duplicates)
    elif node.kind == "map" and isinstance(value, dict | _Pairs) and node.values is not None:
        seen = set()
        for key, item in _items(value):
            if key in seen and duplicates:
                found.setdefault(f'duplicate field "{_join(path, key)}"')
            seen.add(key)
            _walk(item, node.values, _join(path, key), found, duplicates=duplicates)
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            _walk(item, node.items, f"{path}[{index}]", found, duplicates=duplicates)


def _duplicates_anywhere(value: Any, path: str, found: dict[str, None]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, item in value:
            if key in seen:
                found.setdefault(f'duplicate field "{_join(path, key)}"')
            seen.add(key)
            _duplicates_anywhere(item, _join(path, key), found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _duplicates_anywhere(item, f"{path}[{index}]", found)


def prune_unknown(obj: Any, schema: SchemaNode | None) -> None:
    """Drop, in place, the fields :func:`unknown_fields` reports (``Warn`` and ``Ignore``)."""
    if schema is None:
        if isinstance(obj, dict) and "metadata" in obj:
            _prune(obj["metadata"], definitions().node(_OBJECT_META))
        return
    _prune(obj, schema)


def _prune(value: Any, node: SchemaNode) -> None:
    if node.kind == "struct" and isinstance(value, dict):
        for key in list(value):
            child = node.field(key)
            if child is None:
                del value[key]
            else:
                _prune(value[key], child)
    elif node.kind == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            _prune(item, node.values)
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for item in value:
            _prune(item, node.items)


def strict_error(problems: Sequence[str], *, kind: str, version: str) -> errors.ApiError:
    """The 400 of ``fieldValidation=Strict``: ``Deployment in version "v1" cannot be handled as
    a Deployment: strict decoding error: unknown field "spec.foo"``."""
    return _undecodable("strict decoding error: " + ", ".join(problems), kind=kind, version=version)


def _undecodable(detail: str, *, kind: str, version: str) -> errors.ApiError:
    return errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}'
    )


_QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NUMBER_PREFIX = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_GO_SCALARS = {"integer": "int64", "number": "float64", "boolean": "bool", "string": "string"}


def decoding_error(
    obj: Any, schema: SchemaNode | None, *, kind: str, version: str
) -> errors.ApiError | None:
    """The 400 the decoder answers for the first value it cannot convert, or None.

    A quantity that is not one fails with apimachinery's parser message; a JSON type that does
    not fit a scalar field with Go's (``json: cannot unmarshal string into Go struct field
    DeploymentSpec.spec.replicas of type int32``).
    """
    if schema is None:
        return None
    problem = _first_undecodable(obj, schema, struct="", path="")
    return None if problem is None else _undecodable(problem, kind=kind, version=version)


def _first_undecodable(value: Any, node: SchemaNode, *, struct: str, path: str) -> str | None:
    if value is None:
        return None
    if node.type_name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return _quantity_problem(value)
    if node.kind == "struct" and isinstance(value, dict):
        name = (node.type_name or "").rsplit(".", 1)[-1]
        for key, item in value.items():
            child = node.field(key)
            if child is not None:
                problem = _first_undecodable(item, child, struct=name, path=_join(path, key))
                if problem:
                    return problem
    elif node.kind == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            problem = _first_undecodable(item, node.values, struct=struct, path=path)
            if problem:
                return problem
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for item in value:
            problem = _first_undecodable(item, node.items, struct=struct, path=path)
            if problem:
                return problem
    elif node.kind == "scalar" and "oneOf" not in node.body:
        return _scalar_problem(value, node, struct=struct, path=path)
    return None


def _quantity_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"quantities must match the regular expression '{_QUANTITY_REGEX}'"
    try:
        parse_quantity(value)
    except QuantityError:
        if _NUMBER_PREFIX.match(str(value).strip()) is None:
            return f"quantities must match the regular expression '{_QUANTITY_REGEX}'"
        return "unable to parse quantity's suffix"
    return None


def _scalar_problem(value: Any, node: SchemaNode, *, struct: str, path: str) -> str | None:
    types = node.body.get("type")
    wanted = types if isinstance(types, str) else next(iter(types or ["string"]), "string")
    if wanted == "string":
        ok = isinstance(value, str)
    elif wanted == "boolean":
        ok = isinstance(value, bool)
    elif wanted == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        return None
    given = {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "number")
    if isinstance(value, float) and wanted == "integer":
        given = f"number {value}"
    go_type = str(node.body.get("format") or _GO_SCALARS.get(wanted, "string"))
    if node.body.get("format") == "date-time":
        go_type = "string"
    return f"json: cannot unmarshal {given} into Go struct field {struct}.{path} of type {go_type}"


# -- messages, as field.Error prints them -------------------------------------------------------


def _go(value: Any) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers and booleans bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return _go_map(value)
    if isinstance(value, list):
        return "[]string{" + ", ".join(_go(str(v)) for v in value) + "}"
    return str(value)


def _go_map(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "map[string]string(nil)"
    inner = ", ".join(f"{_go(str(k))}:{_go(str(value[k]))}" for k in sorted(value))
    return "map[string]string{" + inner + "}"


def _go_selector(selector: Mapping[str, Any]) -> str:
    labels = selector.get("matchLabels")
    expressions = [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    shown = [
        "v1.LabelSelectorRequirement{"
        f"Key:{_go(str(e.get('key', '')))}, Operator:{_go(str(e.get('operator', '')))}, "
        f"Values:{_go_strings(e.get('values'))}}}"
        for e in expressions
    ]
    matches = "[]v1.LabelSelectorRequirement" + ("{" + ", ".join(shown) + "}" if shown else "(nil)")
    return f"v1.LabelSelector{{MatchLabels:{_go_map(labels)}, MatchExpressions:{matches}}}"


def _go_strings(values: Any) -> str:
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go(str(v)) for v in values) + "}"


def _required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def _invalid(path: str, value: Any, detail: str, *, shown: str | None = None) -> Cause:
    body = f"Invalid value: {_go(value) if shown is None else shown}"
    return Cause("FieldValueInvalid", body + (f": {detail}" if detail else ""), path)


def _unsupported(path: str, value: Any, valid: Sequence[str]) -> Cause:
    listed = ", ".join(json.dumps(v) for v in valid)
    return Cause(
        "FieldValueNotSupported",
        f"Unsupported value: {_go(value)}: supported values: {listed}",
        path,
    )


def _duplicate(path: str, value: Any, *, shown: str | None = None, detail: str = "") -> Cause:
    body = f"Duplicate value: {_go(value) if shown is None else shown}"
    return Cause("FieldValueDuplicate", body + (f": {detail}" if detail else ""), path)


def _forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def _immutable(path: str, value: Any, *, shown: str | None = None) -> Cause:
    return _invalid(path, value, "field is immutable", shown=shown)


# -- name and label syntax (k8s.io/apimachinery/pkg/util/validation) ----------------------------

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QNAME + ")?"


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    shown = "".join(
        f"'{e}', " + (" or " if i < len(examples) - 1 else "") for i, e in enumerate(examples)
    )
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _matches(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_LABEL, value):
        problems.append(
            "must not contain dots"
            if _matches(_SUBDOMAIN, value)
            else _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character",
                _LABEL, "my-name", "123-abc",
            )
        )  # fmt: skip
    return problems


def dns1123_subdomain(value: str) -> list[str]:
    problems = [_max_len(253)] if len(value) > 253 else []
    if not _matches(_SUBDOMAIN, value):
        problems.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN, "example.com",
            )
        )  # fmt: skip
    return problems


def dns1035_label(value: str) -> list[str]:
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_DNS1035, value):
        problems.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035, "my-name", "abc-123",
            )
        )  # fmt: skip
    return problems


def qualified_name(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MESSAGE, _QNAME, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in dns1123_subdomain(parts[0]))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part " + _max_len(63))
    if not _matches(_QNAME, name):
        problems.append(
            "name part " + _regex_error(_QNAME_MESSAGE, _QNAME, "MyName", "my.name", "123-abc")
        )
    return problems


_QNAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)


def label_value(value: str) -> list[str]:
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_LABEL_VALUE, value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE, "MyValue", "my_value", "12345",
            )
        )  # fmt: skip
    return problems


def _port_name(value: str) -> list[str]:
    problems = [_max_len(15)] if len(value) > 15 else []
    if not _matches("[-a-z0-9]+", value):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if re.search("[a-z]", value) is None:
        problems.append("must contain at least one letter (a-z)")
    if "--" in value:
        problems.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def _port_number(value: Any) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


# -- validation ---------------------------------------------------------------------------------

Rule = Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[Cause]]
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_ANNOTATIONS_LIMIT = 256 * 1024


def validate(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None,
    group: str,
    version: str,
    kind: str,
    namespaced: bool,
) -> list[Cause]:
    """The causes of the 422 the registry of ``kind`` answers for ``obj`` (empty when valid).

    ``old`` is the stored object on update. Expects the body already defaulted and carrying the
    server-set metadata (uid and creationTimestamp are copied from ``old`` before this runs, as
    the real store does).
    """
    meta = _map(obj.get("metadata"))
    custom = group not in _BUILT_IN_GROUPS
    if old is None:
        name_rule = _NAME_RULES.get((group, kind), dns1123_subdomain)
        causes = _meta_create(meta, namespaced=namespaced, name_rule=name_rule, custom=custom)
    else:
        causes = _meta_update(meta, _map(old.get("metadata")), custom=custom)
    rule = _RULES.get((group, kind))
    if rule is not None:
        causes.extend(rule(obj, old))
    unique: dict[tuple[str, str], Cause] = {}
    for cause in causes:
        unique.setdefault((cause.field, cause.message), cause)
    return list(unique.values())


_BUILT_IN_GROUPS = frozenset(
    {"", "apps", "policy", "coordination.k8s.io", "events.k8s.io", "batch", "scheduling.k8s.io"}
)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for index, item in enumerate(_list(value)):
        if isinstance(item, Mapping):
            yield index, item


def _names(path: str, value: str, problems: list[str]) -> list[Cause]:
    return [_invalid(path, value, problem) for problem in problems]


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def _meta_create(
    meta: Mapping[str, Any],
    *,
    namespaced: bool,
    name_rule: Callable[[str], list[str]],
    custom: bool,
) -> list[Cause]:
    causes: list[Cause] = []
    generate = str(meta.get("generateName") or "")
    if generate:
        causes += _names(
            "metadata.generateName", generate, name_rule(_mask_trailing_dash(generate))
        )
    name = str(meta.get("name") or "")
    if not name:
        causes.append(_required("metadata.name", "name or generateName is required"))
    else:
        causes += _names("metadata.name", name, name_rule(name))
    namespace = str(meta.get("namespace") or "")
    if namespaced and not namespace:
        causes.append(_required("metadata.namespace"))
    elif namespaced:
        causes += _names("metadata.namespace", namespace, dns1123_label(namespace))
    elif namespace:
        causes.append(_forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(_invalid("metadata.generation", generation, _NEGATIVE))
    return causes + _meta_common(meta, custom=custom)


_NEGATIVE = "must be greater than or equal to 0"
_EMPTY_KEY_OPERATOR = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)
_CONFIG_KEY_MESSAGE = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def _meta_common(meta: Mapping[str, Any], *, custom: bool) -> list[Cause]:
    causes = _labels(meta.get("labels"), "metadata.labels")
    annotations = _map(meta.get("annotations"))
    for key in sorted(annotations):
        causes += _names("metadata.annotations", key, qualified_name(key.lower()))
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes",
                "metadata.annotations",
            )
        )
    for _, ref in _dicts(meta.get("ownerReferences")):
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            causes.append(
                _invalid(
                    "metadata.ownerReferences.apiVersion", api_version, "version must not be empty"
                )
            )
        for part in ("kind", "name", "uid"):
            if not ref.get(part):
                causes.append(
                    _invalid(
                        f"metadata.ownerReferences.{part}",
                        str(ref.get(part) or ""),
                        "must not be empty",
                    )
                )
    for index, finalizer in enumerate(_list(meta.get("finalizers"))):
        path = f"metadata.finalizers[{index}]"
        causes += _names(path, str(finalizer), qualified_name(str(finalizer)))
        standard = "/" in str(finalizer) or finalizer in _STANDARD_FINALIZERS
        if not custom and not standard:
            causes.append(
                _invalid(
                    path,
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def _labels(labels: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    labels = _map(labels)
    for key in sorted(labels):
        causes += _names(path, key, qualified_name(key))
        causes += _names(path, str(labels[key]), label_value(str(labels[key])))
    return causes


def _meta_update(meta: Mapping[str, Any], old: Mapping[str, Any], *, custom: bool) -> list[Cause]:
    causes: list[Cause] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(_list(meta.get("finalizers"))) - set(_list(old.get("finalizers"))))
        if added:
            causes.append(
                _forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {_go_strings(added)}",
                )
            )
    generation, old_generation = meta.get("generation"), old.get("generation")
    if (
        isinstance(generation, int)
        and isinstance(old_generation, int)
        and generation < old_generation
    ):
        causes.append(_invalid("metadata.generation", generation, "must not be decremented"))
    for part in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
        value = meta.get(part)
        if part == "uid" and not value:
            continue
        if (value or None) != (old.get(part) or None):
            causes.append(_immutable(f"metadata.{part}", value if value is not None else ""))
    return causes + _meta_common(meta, custom=custom)


# -- pods ---------------------------------------------------------------------------------------

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_MAX_INT32 = 2147483647


def _pod_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    volumes: set[str] = set()
    for index, volume in _dicts(spec.get("volumes")):
        where = f"{path}.volumes[{index}].name"
        name = str(volume.get("name") or "")
        if not name:
            causes.append(_required(where))
        else:
            causes += _names(where, name, dns1123_label(name))
        if name in volumes:
            causes.append(_duplicate(where, name))
        volumes.add(name)
    containers = _list(spec.get("containers"))
    if not containers:
        causes.append(_required(f"{path}.containers"))
    seen: set[str] = set()
    for part in ("containers", "initContainers"):
        for index, container in _dicts(spec.get(part)):
            where = f"{path}.{part}[{index}]"
            causes += _container(container, where, volumes, probes=part == "containers")
            name = str(container.get("name") or "")
            if name in seen:
                causes.append(_duplicate(f"{where}.name", name))
            seen.add(name)
    causes += _choice(spec, "restartPolicy", path, ("Always", "OnFailure", "Never"))
    causes += _choice(
        spec, "dnsPolicy", path, ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    )
    causes += _labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for part in ("serviceAccountName", "nodeName", "priorityClassName"):
        if spec.get(part):
            causes += _names(f"{path}.{part}", str(spec[part]), dns1123_subdomain(str(spec[part])))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _MAX_INT32:
        causes.append(
            _invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                f"must be between 1 and {_MAX_INT32}, inclusive",
            )
        )
    for part in ("hostname", "subdomain"):
        if spec.get(part):
            causes += _names(f"{path}.{part}", str(spec[part]), dns1123_label(str(spec[part])))
    return causes + _tolerations(spec.get("tolerations"), f"{path}.tolerations")


def _choice(holder: Mapping[str, Any], key: str, path: str, valid: Sequence[str]) -> list[Cause]:
    value = holder.get(key)
    if not value:
        return [_required(f"{path}.{key}")]
    return [] if value in valid else [_unsupported(f"{path}.{key}", value, valid)]


def _container(
    container: Mapping[str, Any], path: str, volumes: set[str], *, probes: bool
) -> list[Cause]:
    causes: list[Cause] = []
    name = str(container.get("name") or "")
    if not name:
        causes.append(_required(f"{path}.name"))
    else:
        causes += _names(f"{path}.name", name, dns1123_label(name))
    if not container.get("image"):
        causes.append(_required(f"{path}.image"))
    port_names: set[str] = set()
    for index, port in _dicts(container.get("ports")):
        where = f"{path}.ports[{index}]"
        port_name = str(port.get("name") or "")
        if port_name and _port_name(port_name):
            causes += _names(f"{where}.name", port_name, _port_name(port_name))
        elif port_name in port_names:
            causes.append(_duplicate(f"{where}.name", port_name))
        elif port_name:
            port_names.add(port_name)
        if not port.get("containerPort"):
            causes.append(_required(f"{where}.containerPort"))
        else:
            causes += [
                _invalid(f"{where}.containerPort", port["containerPort"], m)
                for m in _port_number(port["containerPort"])
            ]
        if port.get("hostPort"):
            causes += [
                _invalid(f"{where}.hostPort", port["hostPort"], m)
                for m in _port_number(port["hostPort"])
            ]
        causes += _choice(port, "protocol", where, _PROTOCOLS)
    mount_paths: set[str] = set()
    for index, mount in _dicts(container.get("volumeMounts")):
        where = f"{path}.volumeMounts[{index}]"
        mount_name = str(mount.get("name") or "")
        if not mount_name:
            causes.append(_required(f"{where}.name"))
        if mount_name not in volumes:
            causes.append(
                Cause("FieldValueNotFound", f"Not found: {_go(mount_name)}", f"{where}.name")
            )
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            causes.append(_required(f"{where}.mountPath"))
        if mount_path in mount_paths:
            causes.append(_invalid(f"{where}.mountPath", mount_path, "must be unique"))
        mount_paths.add(mount_path)
    policy = container.get("imagePullPolicy")
    if not policy:
        causes.append(_required(f"{path}.imagePullPolicy"))
    elif policy not in ("Always", "IfNotPresent", "Never"):
        causes.append(
            _unsupported(f"{path}.imagePullPolicy", policy, ("Always", "IfNotPresent", "Never"))
        )
    causes += _resources(_map(container.get("resources")), f"{path}.resources")
    if probes:
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if isinstance(container.get(probe), Mapping):
                causes += _probe(
                    container[probe], f"{path}.{probe}", once=probe != "readinessProbe"
                )
    return causes


def _resources(resources: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    parsed: dict[str, dict[str, Any]] = {"limits": {}, "requests": {}}
    for part in ("limits", "requests"):
        values = _map(resources.get(part))
        for name in sorted(values):
            where = f"{path}.{part}[{name}]"
            standard = name in ("cpu", "memory", "ephemeral-storage") or name.startswith(
                "hugepages-"
            )
            if "/" not in name and not standard:
                causes.append(_invalid(where, name, "must be a standard resource for containers"))
            try:
                quantity = parse_quantity(values[name])
            except QuantityError:
                continue  # the decoder has refused it already
            if quantity.value < 0:
                causes.append(_invalid(where, quantity.canonical(), _NEGATIVE))
            parsed[part][name] = quantity
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request.value > limit.value:
            causes.append(
                _invalid(
                    f"{path}.requests", request.canonical(),
                    f"must be less than or equal to {name} limit of {limit.canonical()}",
                )
            )  # fmt: skip
    return causes


def _probe(probe: Mapping[str, Any], path: str, *, once: bool) -> list[Cause]:
    handlers = [h for h in _HANDLERS if probe.get(h) is not None]
    causes: list[Cause] = []
    if not handlers:
        causes.append(_required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        causes.append(_forbidden(f"{path}.{extra}", "may not specify more than 1 handler type"))
    for part in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        value = probe.get(part)
        if isinstance(value, int) and value < 0:
            causes.append(_invalid(f"{path}.{part}", value, _NEGATIVE))
    if once and probe.get("successThreshold", 1) != 1:
        causes.append(_invalid(f"{path}.successThreshold", probe["successThreshold"], "must be 1"))
    return causes


def _tolerations(tolerations: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, toleration in _dicts(tolerations):
        where = f"{path}[{index}]"
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        if key:
            causes += _names(f"{where}.key", key, qualified_name(key))
        if not key and operator != "Exists":
            causes.append(
                _invalid(
                    f"{where}.operator",
                    operator,
                    _EMPTY_KEY_OPERATOR,
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                _invalid(
                    f"{where}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", "") and label_value(value):
            causes.append(_invalid(f"{where}.operator", value, ";".join(label_value(value))))
        elif operator == "Exists" and value:
            seconds = "nil" if toleration.get("tolerationSeconds") is None else "0xc000012345"
            shown = (
                f"core.Toleration{{Key:{_go(key)}, Operator:{_go(operator)}, Value:{_go(value)}, "
                f"Effect:{_go(effect)}, TolerationSeconds:(*int64)({seconds})}}"
            )
            causes.append(
                _invalid(
                    f"{where}.operator",
                    None,
                    "value must be empty when `operator` is 'Exists'",
                    shown=shown,
                )
            )
        elif operator not in ("Equal", "Exists", ""):
            causes.append(_unsupported(f"{where}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _EFFECTS:
            causes.append(_unsupported(f"{where}.effect", effect, _EFFECTS))
    return causes


def _defaulted_spec(old: Mapping[str, Any], *, group: str, kind: str) -> Mapping[str, Any]:
    """The stored spec as the real server reads it: defaulted when decoded from storage, so an
    object loaded without its defaults does not look changed by an update that has them."""
    copied: dict[str, Any] = json.loads(json.dumps({"spec": old.get("spec")}))
    defaulting.default_object(copied, group=group, version="v1", kind=kind)
    return _map(copied.get("spec"))


def _pod(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    causes = _pod_spec(spec, "spec")
    if old is None:
        return causes
    old_spec = _defaulted_spec(old, group="", kind="Pod")
    for part in ("containers", "initContainers"):
        new_list, old_list = _list(spec.get(part)), _list(old_spec.get(part))
        if len(new_list) != len(old_list):
            causes.append(
                _forbidden(f"spec.{part}", "pod updates may not add or remove containers")
            )
            return causes
        for index, container in _dicts(new_list):
            image = str(container.get("image") or "")
            if image != image.strip():
                causes.append(
                    _invalid(
                        f"spec.{part}[{index}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    deadline, old_deadline = (
        spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if deadline is not None and old_deadline is not None and deadline > old_deadline:
        causes.append(
            _invalid(
                "spec.activeDeadlineSeconds",
                deadline,
                "must be less than or equal to previous value",
            )
        )
        return causes
    if deadline is None and old_deadline is not None:
        causes.append(
            _invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )
    new_tolerations = [t for _, t in _dicts(spec.get("tolerations"))]
    for _, kept in _dicts(old_spec.get("tolerations")):
        plain = {k: v for k, v in kept.items() if k != "tolerationSeconds"}
        if not any(
            {k: v for k, v in t.items() if k != "tolerationSeconds"} == plain
            for t in new_tolerations
        ):
            causes.append(
                _forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            )
            break
    munged = dict(spec)
    for part in ("containers", "initContainers"):
        munged[part] = [
            {**c, "image": o.get("image")}
            if isinstance(c, Mapping) and isinstance(o, Mapping)
            else c
            for c, o in zip(_list(spec.get(part)), _list(old_spec.get(part)), strict=True)
        ]
        if part not in spec:
            munged.pop(part)
    for part in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged.pop(part, None)
        if part in old_spec:
            munged[part] = old_spec[part]
    grace, old_grace = (
        munged.get("terminationGracePeriodSeconds"),
        old_spec.get("terminationGracePeriodSeconds"),
    )
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged != dict(old_spec):
        causes.append(_forbidden("spec", _POD_UPDATE + "\n" + _spec_diff(old_spec, munged)))
    return causes


_POD_UPDATE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)"
)


def _spec_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A short rendering of what changed (the real server prints a ``cmp.Diff`` of Go structs)."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            title = key[:1].upper() + key[1:]
            if key in old:
                lines.append(f"- \t{title}: {json.dumps(old[key], sort_keys=True)},")
            if key in new:
                lines.append(f"+ \t{title}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines)


# -- workloads ----------------------------------------------------------------------------------


def _selector_problems(selector: Mapping[str, Any], path: str) -> list[Cause]:
    causes = _labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for index, expression in _dicts(selector.get("matchExpressions")):
        where = f"{path}.matchExpressions[{index}]"
        operator, values = expression.get("operator"), _list(expression.get("values"))
        if operator in ("In", "NotIn") and not values:
            causes.append(
                _required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(
                _forbidden(
                    f"{where}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append(_invalid(f"{where}.operator", operator, "not a valid selector operator"))
        key = str(expression.get("key") or "")
        causes += _names(f"{where}.key", key, qualified_name(key))
        for position, value in enumerate(values):
            causes += _names(f"{where}.values[{position}]", str(value), label_value(str(value)))
    return causes


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)``."""
    for key, value in _map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for _, expression in _dicts(selector.get("matchExpressions")):
        label, values = labels.get(str(expression.get("key"))), _list(expression.get("values"))
        operator, present = expression.get("operator"), expression.get("key") in labels
        if (
            (operator == "In" and label not in values)
            or (operator == "NotIn" and present and label in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


def _workload(obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, kind: str) -> list[Cause]:
    spec = _map(obj.get("spec"))
    causes: list[Cause] = []
    if kind == "StatefulSet":
        policy = spec.get("podManagementPolicy")
        if not policy:
            causes.append(_required("spec.podManagementPolicy"))
        elif policy not in ("OrderedReady", "Parallel"):
            causes.append(
                _invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
            )
    for part in ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        value = spec.get(part)
        if isinstance(value, int) and value < 0:
            causes.append(_invalid(f"spec.{part}", value, _NEGATIVE))
    selector = spec.get("selector")
    template = _map(spec.get("template"))
    labels = _map(_map(template.get("metadata")).get("labels"))
    if not isinstance(selector, Mapping):
        causes.append(_required("spec.selector"))
        matching = False
    else:
        problems = _selector_problems(selector, "spec.selector")
        causes += problems
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            target = {"Deployment": "deployment", "ReplicaSet": "deployment"}.get(
                kind, kind.lower()
            )
            causes.append(
                _invalid(
                    "spec.selector",
                    None,
                    f"empty selector is invalid for {target}",
                    shown=_go_selector(selector),
                )
            )
        matching = bool(problems) or not (
            selector.get("matchLabels") or selector.get("matchExpressions")
        )
        matching = matching or _selects(selector, labels)
    if not matching:
        shown = _go_map(labels if "labels" in _map(template.get("metadata")) else None)
        causes.append(
            _invalid(
                "spec.template.metadata.labels",
                None,
                "`selector` does not match template `labels`",
                shown=shown,
            )
        )
    causes += _labels(labels, "spec.template.metadata.labels")
    template_spec = _map(template.get("spec"))
    causes += _pod_spec(template_spec, "spec.template.spec")
    if template_spec.get("restartPolicy", "Always") != "Always":
        causes.append(
            _unsupported(
                "spec.template.spec.restartPolicy", template_spec["restartPolicy"], ("Always",)
            )
        )
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            _forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    if kind == "Deployment":
        causes += _deployment_strategy(_map(spec.get("strategy")))
        deadline = spec.get("progressDeadlineSeconds")
        if isinstance(deadline, int) and deadline <= int(spec.get("minReadySeconds") or 0):
            causes.append(
                _invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    if old is None:
        return causes
    old_spec = _defaulted_spec(old, group="apps", kind=kind)
    if kind == "StatefulSet":
        mutable = (
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
        )
        if {k: v for k, v in spec.items() if k not in mutable} != {
            k: v for k, v in old_spec.items() if k not in mutable
        }:
            causes.append(
                _forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
    elif _normal_selector(spec.get("selector")) != _normal_selector(old_spec.get("selector")):
        causes.append(
            _immutable("spec.selector", None, shown=_go_selector(_map(spec.get("selector"))))
        )
    return causes


def _normal_selector(selector: Any) -> tuple[Any, Any]:
    selector = _map(selector)
    return (dict(_map(selector.get("matchLabels"))), _list(selector.get("matchExpressions")))


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    if isinstance(value, str):
        if not _matches("[0-9]+%", value):
            detail = _regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                "1%",
                "93%",
            )
            return [_invalid(path, None, detail, shown=value)]
        if int(value[:-1]) > 100:
            return [_invalid(path, None, "must not be greater than 100%", shown=value)]
        return []
    if isinstance(value, int) and value < 0:
        return [_invalid(path, value, _NEGATIVE)]
    return []


def _deployment_strategy(strategy: Mapping[str, Any]) -> list[Cause]:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate" and rolling is not None:
        return [
            _forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            )
        ]
    if kind == "RollingUpdate" and isinstance(rolling, Mapping):
        path = "spec.strategy.rollingUpdate"
        causes = _int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable")
        causes += _int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge")
        if (
            str(rolling.get("maxUnavailable")).rstrip("%")
            == "0"
            == str(rolling.get("maxSurge")).rstrip("%")
        ):
            causes.append(
                _invalid(
                    f"{path}.maxUnavailable",
                    None,
                    "may not be 0 when `maxSurge` is 0",
                    shown=str(rolling.get("maxUnavailable")),
                )
            )
        return causes
    if kind not in ("Recreate", "RollingUpdate"):
        return [_unsupported("spec.strategy.type", kind, ("Recreate", "RollingUpdate"))]
    return []


# -- services -----------------------------------------------------------------------------------


def _service(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    kind = spec.get("type")
    ips = [str(ip) for ip in _list(spec.get("clusterIPs"))] or (
        [str(spec["clusterIP"])] if spec.get("clusterIP") else []
    )
    headless = spec.get("clusterIP") == "None"
    causes: list[Cause] = []
    if old is not None:
        causes += _cluster_ips_update(spec, ips, _map(old.get("spec")))
    ports = list(_dicts(spec.get("ports")))
    if not ports and not headless and kind != "ExternalName":
        causes.append(_required("spec.ports"))
    if kind == "ExternalName":
        if ips:
            causes.append(_forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        name = str(spec.get("externalName") or "").removesuffix(".")
        if name:
            causes += _names("spec.externalName", name, dns1123_subdomain(name))
        else:
            causes.append(_required("spec.externalName"))
    names: set[str] = set()
    for index, port in ports:
        where = f"spec.ports[{index}]"
        name = str(port.get("name") or "")
        if len(ports) > 1 and not name:
            causes.append(_required(f"{where}.name"))
        elif name:
            causes += _names(f"{where}.name", name, dns1123_label(name))
            if name in names:
                causes.append(_duplicate(f"{where}.name", name))
            names.add(name)
        causes += [
            _invalid(f"{where}.port", port.get("port"), m) for m in _port_number(port.get("port"))
        ]
        causes += _choice(port, "protocol", where, _PROTOCOLS)
        target = port.get("targetPort")
        if isinstance(target, str):
            causes += _names(f"{where}.targetPort", target, _port_name(target))
        elif target is not None:
            causes += [_invalid(f"{where}.targetPort", target, m) for m in _port_number(target)]
    causes += _labels(spec.get("selector"), "spec.selector")
    causes += _choice(spec, "sessionAffinity", "spec", ("ClientIP", "None"))
    if not kind:
        causes.append(_required("spec.type"))
    elif kind not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        causes.append(
            _unsupported(
                "spec.type", kind, ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
            )
        )
    seen: dict[tuple[Any, Any], int] = {}
    for index, port in ports:
        key = (port.get("protocol"), port.get("port"))
        if key in seen:
            shown = (
                f'core.ServicePort{{Name:"", Protocol:{_go(key[0] or "")}, '
                f"AppProtocol:(*string)(nil), Port:{key[1]}, "
                'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
            )
            causes.append(_duplicate(f"spec.ports[{index}]", None, shown=shown))
        seen[key] = index
    if kind != "ExternalName":
        causes += _cluster_ips(spec, ips)
    return causes


def _cluster_ips(spec: Mapping[str, Any], ips: list[str]) -> list[Cause]:
    causes: list[Cause] = []
    if spec.get("clusterIP") and ips and ips[0] != spec["clusterIP"]:
        causes.append(
            _invalid(
                "spec.clusterIPs",
                None,
                "first value must match `clusterIP`",
                shown=_go_strings(ips),
            )
        )
    elif not spec.get("clusterIP") and ips:
        causes.append(
            _invalid(
                "spec.clusterIPs",
                None,
                "must be empty when `clusterIP` is not specified",
                shown=_go_strings(ips),
            )
        )
    families = [str(f) for f in _list(spec.get("ipFamilies"))]
    for index, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            causes.append(_unsupported(f"spec.ipFamilies[{index}]", family, ("IPv4", "IPv6")))
        if family in families[:index]:
            causes.append(_duplicate(f"spec.ipFamilies[{index}]", family))
    policy = spec.get("ipFamilyPolicy")
    if policy and policy not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        causes.append(
            _unsupported(
                "spec.ipFamilyPolicy",
                policy,
                ("PreferDualStack", "RequireDualStack", "SingleStack"),
            )
        )
    for index, ip in enumerate(ips):
        if index == 0 and ip == "None":
            if len(ips) > 1:
                causes.append(
                    _invalid(
                        "spec.clusterIPs",
                        None,
                        "'None' must be the first and only value",
                        shown=_go_strings(ips),
                    )
                )
            continue
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            causes.append(
                _invalid(
                    f"spec.clusterIPs[{index}]",
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    return causes


def _cluster_ips_update(
    spec: Mapping[str, Any], ips: list[str], old: Mapping[str, Any]
) -> list[Cause]:
    if "ExternalName" in (spec.get("type"), old.get("type")):
        return []
    old_ips = [str(ip) for ip in _list(old.get("clusterIPs"))] or (
        [str(old["clusterIP"])] if old.get("clusterIP") else []
    )
    if spec.get("clusterIP") == "None" and old.get("clusterIP") == "None":
        return []
    shown = _go_strings(ips)
    if len(old_ips) == len(ips):
        return [
            _invalid(f"spec.clusterIPs[{i}]", None, "may not change once set", shown=shown)
            for i, ip in enumerate(old_ips)
            if ip != ips[i]
        ]
    if not ips:
        return [
            _invalid("spec.clusterIPs[0]", None, "primary clusterIP can not be unset", shown=shown)
        ]
    if old_ips and old_ips[0] != ips[0]:
        return [_invalid("spec.clusterIPs[0]", None, "may not change once set", shown=shown)]
    return []


# -- other kinds --------------------------------------------------------------------------------


def _namespace(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    for finalizer in _list(_map(obj.get("spec")).get("finalizers")):
        causes += _names("spec.finalizers", str(finalizer), qualified_name(str(finalizer)))
        if "/" not in str(finalizer) and finalizer not in _STANDARD_FINALIZERS:
            causes.append(
                _invalid(
                    "spec.finalizers",
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def _node(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    causes: list[Cause] = []
    unique: set[tuple[str, str]] = set()
    for index, taint in _dicts(spec.get("taints")):
        where = f"spec.taints[{index}]"
        key, value, effect = (str(taint.get(k) or "") for k in ("key", "value", "effect"))
        causes += _names(f"{where}.key", key, qualified_name(key))
        if label_value(value):
            causes.append(_invalid(f"{where}.value", value, ";".join(label_value(value))))
        if not effect:
            causes.append(_required(f"{where}.effect"))
        elif effect not in _EFFECTS:
            causes.append(_unsupported(f"{where}.effect", effect, _EFFECTS))
        if (key, effect) in unique:
            shown = (
                f"core.Taint{{Key:{_go(key)}, Value:{_go(value)}, Effect:{_go(effect)}, "
                "TimeAdded:(*v1.Time)(nil)}"
            )
            causes.append(
                _duplicate(
                    where, None, shown=shown, detail="taints must be unique by key and effect pair"
                )
            )
        unique.add((key, effect))
    if old is not None:
        old_spec = _map(old.get("spec"))
        if old_spec.get("podCIDRs") and _list(spec.get("podCIDRs")) != _list(
            old_spec.get("podCIDRs")
        ):
            causes.append(
                _forbidden(
                    "spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'
                )
            )
        if old_spec.get("providerID") and spec.get("providerID") != old_spec["providerID"]:
            causes.append(
                _forbidden(
                    "spec.providerID",
                    'node updates may not change providerID except from "" to valid',
                )
            )
    return causes


def _disruption_budget(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    causes: list[Cause] = []
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        selector = "nil" if spec.get("selector") is None else "0xc000b2f0c0"
        policy = "nil" if spec.get("unhealthyPodEvictionPolicy") is None else "0xc000c3a0e0"
        shown = (
            "policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a1e0a0), "
            f"Selector:(*v1.LabelSelector)({selector}), "
            "MaxUnavailable:(*intstr.IntOrString)(0xc000a1e0c0), UnhealthyPodEvictionPolicy:"
            f"(*policy.UnhealthyPodEvictionPolicyType)({policy})}}"
        )
        causes.append(
            _invalid(
                "spec", None, "minAvailable and maxUnavailable cannot be both set", shown=shown
            )
        )
    if low is not None:
        causes += _int_or_percent(low, "spec.minAvailable")
    if high is not None:
        causes += _int_or_percent(high, "spec.maxUnavailable")
    if isinstance(spec.get("selector"), Mapping):
        causes += _selector_problems(spec["selector"], "spec.selector")
    eviction = spec.get("unhealthyPodEvictionPolicy")
    if eviction is not None and eviction not in ("AlwaysAllow", "IfHealthyBudget"):
        causes.append(
            _unsupported(
                "spec.unhealthyPodEvictionPolicy", eviction, ("AlwaysAllow", "IfHealthyBudget")
            )
        )
    return causes


def _lease(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = _map(obj.get("spec"))
    causes: list[Cause] = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        causes.append(_invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if isinstance(transitions, int) and transitions < 0:
        causes.append(_invalid("spec.leaseTransitions", transitions, _NEGATIVE))
    return causes


def _config_map(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    binary = _map(obj.get("binaryData"))
    for part in ("data", "binaryData"):
        for key in sorted(_map(obj.get(part))):
            where = f"{part}[{key}]"
            problems = [_max_len(253)] if len(key) > 253 else []
            if not _matches("[-._a-zA-Z0-9]+", key):
                problems.append(
                    _regex_error(
                        _CONFIG_KEY_MESSAGE,
                        "[-._a-zA-Z0-9]+",
                        "key.name",
                        "KEY_NAME",
                        "key-name",
                    )
                )
            if key in (".", ".."):
                problems.append(f"must not be '{key}'")
            elif key.startswith(".."):
                problems.append("must not start with '..'")
            causes += _names(where, key, problems)
            if part == "data" and key in binary:
                causes.append(_invalid(where, key, "duplicate of key present in binaryData"))
    return causes


def _event(obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, new_api: bool) -> list[Cause]:
    meta = _map(obj.get("metadata"))
    namespace = str(meta.get("namespace") or "")
    involved = _map(obj.get("regarding" if new_api else "involvedObject"))
    involved_ns = str(involved.get("namespace") or "")
    causes: list[Cause] = []
    if new_api:
        if not obj.get("eventTime"):
            causes.append(_required("eventTime"))
        if obj.get("type") not in ("Normal", "Warning"):
            causes.append(_invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for part in ("reportingController", "reportingInstance", "action", "reason"):
            if not obj.get(part):
                causes.append(_required(part))
        if involved_ns == "" and namespace not in ("default", "kube-system"):
            causes.append(
                _invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
            )
    elif not obj.get("eventTime") and (
        (involved_ns == "" and namespace not in ("", "default"))
        or (involved_ns and involved_ns != namespace)
    ):
        causes.append(
            _invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
        )
    return causes


_NAME_RULES: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("", "Namespace"): dns1123_label,
    ("", "Service"): dns1035_label,
}

_RULES: dict[tuple[str, str], Rule] = {
    ("", "Pod"): _pod,
    ("", "Service"): _service,
    ("", "Namespace"): _namespace,
    ("", "Node"): _node,
    ("", "ConfigMap"): _config_map,
    ("", "Event"): lambda obj, old: _event(obj, old, new_api=False),
    ("events.k8s.io", "Event"): lambda obj, old: _event(obj, old, new_api=True),
    ("policy", "PodDisruptionBudget"): _disruption_budget,
    ("coordination.k8s.io", "Lease"): _lease,
}
for _kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
    _RULES["apps", _kind] = functools.partial(_workload, kind=_kind)
