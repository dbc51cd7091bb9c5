"""The vocabulary of validation: name syntax, and causes worded as the real API server words them.

**Name and label syntax** is :mod:`kubemedic.model.names`' (re-exported here for the
registry's validators): each check returns the list of problems with a value in the library's
words; an empty list means valid.

**Causes** are ``StatusCause``\\ s worded exactly as
``k8s.io/apimachinery/pkg/util/validation/field`` words its errors (``Required value``,
``Invalid value: "x": ...``, ``Unsupported value: "x": supported values: "a", "b"``,
``Duplicate value``, ``Forbidden``). Values are printed the way Go's ``%#v`` prints them
(:func:`go`, :func:`go_map`, :func:`go_selector`), and quoted strings the way ``%q`` does
(:func:`go_quote`, also in the messages of selectors and field managers), since clients and
people match on these strings.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kubemedic.model.names import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    go_quote,
    label_value,
    matches,
    max_len,
    port_name,
    port_number,
    qualified_name,
    regex_error,
)
from kubemedic.sim.machinery.errors import Cause

__all__ = [
    "NEGATIVE",
    "STANDARD_FINALIZERS",
    "Rule",
    "as_list",
    "as_map",
    "choice",
    "dicts",
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "duplicate",
    "forbidden",
    "go",
    "go_map",
    "go_quote",
    "go_selector",
    "go_strings",
    "immutable",
    "invalid",
    "label_value",
    "labels",
    "matches",
    "max_len",
    "names",
    "port_name",
    "port_number",
    "qualified_name",
    "regex_error",
    "required",
    "unsupported",
]

Rule = Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[Cause]]
"""A kind's ``Validate``/``ValidateUpdate``: the causes for an object and its stored version
(``None`` on create)."""

NEGATIVE = "must be greater than or equal to 0"
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

# -- messages, as field.Error prints them -------------------------------------------------------


def go(value: Any) -> str:
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
        return go_map(value)
    if isinstance(value, list):
        return "[]string{" + ", ".join(go(str(v)) for v in value) + "}"
    return str(value)


def go_map(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "map[string]string(nil)"
    inner = ", ".join(f"{go(str(k))}:{go(str(value[k]))}" for k in sorted(value))
    return "map[string]string{" + inner + "}"


def go_selector(selector: Mapping[str, Any]) -> str:
    labels = selector.get("matchLabels")
    expressions = [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    shown = [
        "v1.LabelSelectorRequirement{"
        f"Key:{go(str(e.get('key', '')))}, Operator:{go(str(e.get('operator', '')))}, "
        f"Values:{go_strings(e.get('values'))}}}"
        for e in expressions
    ]
    requirements = "[]v1.LabelSelectorRequirement" + (
        "{" + ", ".join(shown) + "}" if shown else "(nil)"
    )
    return f"v1.LabelSelector{{MatchLabels:{go_map(labels)}, MatchExpressions:{requirements}}}"


def go_strings(values: Any) -> str:
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go(str(v)) for v in values) + "}"


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def invalid(path: str, value: Any, detail: str, *, shown: str | None = None) -> Cause:
    body = f"Invalid value: {go(value) if shown is None else shown}"
    return Cause("FieldValueInvalid", body + (f": {detail}" if detail else ""), path)


def unsupported(path: str, value: Any, valid: Sequence[str]) -> Cause:
    listed = ", ".join(json.dumps(v) for v in valid)
    return Cause(
        "FieldValueNotSupported",
        f"Unsupported value: {go(value)}: supported values: {listed}",
        path,
    )


def duplicate(path: str, value: Any, *, shown: str | None = None, detail: str = "") -> Cause:
    body = f"Duplicate value: {go(value) if shown is None else shown}"
    return Cause("FieldValueDuplicate", body + (f": {detail}" if detail else ""), path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def immutable(path: str, value: Any, *, shown: str | None = None) -> Cause:
    return invalid(path, value, "field is immutable", shown=shown)


def names(path: str, value: str, problems: list[str]) -> list[Cause]:
    """One ``Invalid value`` cause per problem a syntax check found with ``value``."""
    return [invalid(path, value, problem) for problem in problems]


def labels(labels: Any, path: str) -> list[Cause]:
    """``ValidateLabels``: qualified-name keys and label values."""
    labels = as_map(labels)
    if all(type(value) is str for value in labels.values()):
        return list(_string_labels(path, tuple(labels.items())))
    return _labels(labels, path)


@functools.lru_cache(maxsize=8192)
def _string_labels(path: str, items: tuple[tuple[str, str], ...]) -> tuple[Cause, ...]:
    return tuple(cause for key, value in sorted(items) for cause in _label(path, key, value))


@functools.lru_cache(maxsize=8192)
def _label(path: str, key: str, value: str) -> tuple[Cause, ...]:
    return (*names(path, key, qualified_name(key)), *names(path, value, label_value(value)))


def _labels(labels: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key in sorted(labels):
        causes += names(path, key, qualified_name(key))
        causes += names(path, str(labels[key]), label_value(str(labels[key])))
    return causes


def choice(holder: Mapping[str, Any], key: str, path: str, valid: Sequence[str]) -> list[Cause]:
    """``holder[key]`` is required and one of ``valid``."""
    value = holder.get(key)
    if not value:
        return [required(f"{path}.{key}")]
    return [] if value in valid else [unsupported(f"{path}.{key}", value, valid)]


# -- reading JSON ------------------------------------------------------------------------------


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dicts(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for index, item in enumerate(as_list(value)):
        if isinstance(item, Mapping):
            yield index, item


#: The alphabet of ``generateName`` suffixes and controllers' hashes (apimachinery's
#: ``rand.String``: no vowels, so no word is ever spelled, and no 0/1/3 to confuse).
GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def random_suffix(source: random.Random, length: int = 5) -> str:
    """``rand.String(length)``: what ``generateName`` appends, drawn from ``source``."""
    return "".join(source.choice(GENERATED_NAME_ALPHABET) for _ in range(length))
