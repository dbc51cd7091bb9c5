"""Name and label syntax as ``k8s.io/apimachinery/pkg/util/validation`` checks it.

Each check (:func:`dns1123_label`, :func:`dns1123_subdomain`, :func:`dns1035_label`,
:func:`qualified_name`, :func:`label_value`, :func:`port_name`, :func:`port_number`) returns the
list of problems with a value, in the library's order and words, regular expression and
examples included (``a lowercase RFC 1123 label must consist of ... (e.g. 'my-name',  or
'123-abc', regex used for validation is '...')``); an empty list means valid. :func:`go_quote`
quotes a string as Go's ``%q`` does, as these messages and the API server's quote them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = [
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "go_quote",
    "label_value",
    "matches",
    "max_len",
    "port_name",
    "port_number",
    "qualified_name",
    "regex_error",
]


_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _QNAME + ")?"


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """``validation.RegexError``, double spaces included."""
    shown = "".join(
        f"'{e}', " + (" or " if i < len(examples) - 1 else "") for i, e in enumerate(examples)
    )
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def matches(pattern: str, value: str) -> bool:
    compiled = _COMPILED.get(pattern)
    if compiled is None:
        compiled = _COMPILED[pattern] = re.compile(pattern)
    return compiled.fullmatch(value) is not None


_COMPILED: dict[str, re.Pattern[str]] = {}


def max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    return list(_dns1123_label(value))


@functools.lru_cache(maxsize=8192)
def _dns1123_label(value: str) -> tuple[str, ...]:
    problems = [max_len(63)] if len(value) > 63 else []
    if not matches(_LABEL, value):
        problems.append(
            "must not contain dots"
            if matches(_SUBDOMAIN, value)
            else regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character",
                _LABEL, "my-name", "123-abc",
            )
        )  # fmt: skip
    return tuple(problems)


def dns1123_subdomain(value: str) -> list[str]:
    return list(_dns1123_subdomain(value))


@functools.lru_cache(maxsize=8192)
def _dns1123_subdomain(value: str) -> tuple[str, ...]:
    problems = [max_len(253)] if len(value) > 253 else []
    if not matches(_SUBDOMAIN, value):
        problems.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                _SUBDOMAIN, "example.com",
            )
        )  # fmt: skip
    return tuple(problems)


def dns1035_label(value: str) -> list[str]:
    return list(_dns1035_label(value))


@functools.lru_cache(maxsize=8192)
def _dns1035_label(value: str) -> tuple[str, ...]:
    problems = [max_len(63)] if len(value) > 63 else []
    if not matches(_DNS1035, value):
        problems.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character",
                _DNS1035, "my-name", "abc-123",
            )
        )  # fmt: skip
    return tuple(problems)


def qualified_name(value: str) -> list[str]:
    return list(_qualified_name(value))


@functools.lru_cache(maxsize=8192)
def _qualified_name(value: str) -> tuple[str, ...]:
    parts = value.split("/")
    if len(parts) > 2:
        return (
            "a qualified name "
            + regex_error(_QNAME_MESSAGE, _QNAME, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
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
        problems.append("name part " + max_len(63))
    if not matches(_QNAME, name):
        problems.append(
            "name part " + regex_error(_QNAME_MESSAGE, _QNAME, "MyName", "my.name", "123-abc")
        )
    return tuple(problems)


_QNAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)


def label_value(value: str) -> list[str]:
    return list(_label_value(value))


@functools.lru_cache(maxsize=8192)
def _label_value(value: str) -> tuple[str, ...]:
    problems = [max_len(63)] if len(value) > 63 else []
    if not matches(_LABEL_VALUE, value):
        problems.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE, "MyValue", "my_value", "12345",
            )
        )  # fmt: skip
    return tuple(problems)


def port_name(value: str) -> list[str]:
    problems = [max_len(15)] if len(value) > 15 else []
    if not matches("[-a-z0-9]+", value):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if re.search("[a-z]", value) is None:
        problems.append("must contain at least one letter (a-z)")
    if "--" in value:
        problems.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def port_number(value: Any) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return ["must be between 1 and 65535, inclusive"]


def go_quote(text: str) -> str:
    """Go's ``%q`` / ``strconv.Quote`` for the strings these messages quote."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(ch)])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out) + '"'
