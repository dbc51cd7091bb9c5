"""Go's view of decoded JSON, and the patch error worded as the server words it.

kube-apiserver's patch libraries report failures with Go's type names and ``fmt`` verbs
(``map[string]interface {}``, ``%v`` of a float); :func:`gotype` and :func:`gofmt` reproduce them
so both the JSON/merge patches and the strategic merge patch word their errors alike.
:class:`PatchError` carries the HTTP code the real handler answers with.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubemedic.errors import KubemedicError
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.definitions import SchemaNode

__all__ = ["GO_MAP", "GO_SLICE", "PatchError", "gofmt", "gotype", "same", "strategic_supported"]

_REJECTED = "the server rejected our request due to an error in our request"


class PatchError(KubemedicError, ValueError):
    """A patch the API server refuses; ``message`` is the Go error text, ``code`` the HTTP code."""

    def __init__(self, message: str, *, code: int = 500) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def to_api_error(self) -> errors.StatusError:
        """The ``Status`` the real handler answers with for this error."""
        if self.code == 400:
            return errors.bad_request(self.message)
        if self.code == 413:
            return errors.StatusError(
                413, "RequestEntityTooLarge", f"Request entity too large: {self.message}"
            )
        if self.code == 422:
            cause = errors.Cause("UnexpectedServerResponse", self.message)
            return errors.StatusError(422, "Invalid", _REJECTED, causes=(cause,))
        # Errors the handler does not classify reach the client as a reason-less 500.
        return errors.StatusError(self.code, "", self.message)


def strategic_supported(schema: SchemaNode | None) -> bool:
    """Whether the server takes a strategic merge patch for this schema: only built-in types
    (Go structs) do; custom resources get 415 Unsupported Media Type."""
    return schema is not None and schema.kind == "struct"


def same(a: Any, b: Any) -> bool:
    """Go's ``==`` on decoded JSON: equal values of the same type (``1 != 1.0 != True``)."""
    return type(a) is type(b) and a == b


# --- Go's view of decoded JSON, for error messages worded like the server's --------------------

GO_MAP = "map[string]interface {}"
GO_SLICE = "[]interface {}"


def gotype(value: Any) -> str:
    """The Go type a JSON value decodes to (``"nil"`` for null)."""
    if isinstance(value, dict):
        return GO_MAP
    if isinstance(value, list):
        return GO_SLICE
    if value is None:
        return "nil"
    return {bool: "bool", int: "int64", float: "float64"}.get(type(value), "string")


def gofmt(value: Any, verb: str = "v") -> str:
    """Go's ``%v`` (or ``%s``) of a decoded JSON value: ``map[a:1 b:[x y]]``."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{gofmt(value[k], verb)}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(gofmt(v, verb) for v in value) + "]"
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)" if verb == "s" else "<nil>"
    if isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = _go_float(value) if isinstance(value, float) else str(value)
    return f"%!s({gotype(value)}={text})" if verb == "s" else text


def _go_float(value: float) -> str:
    """Go's ``%v`` of a float64: shortest digits, exponent form from 1e6 and below 1e-4."""
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    if value == 0:
        return "-0" if sign else "0"
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)
    if not -4 <= point - 1 < 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'-' if point < 1 else '+'}{abs(point - 1):02d}"
    elif point <= 0:
        body = "0." + "0" * -point + text
    else:
        body = (
            text[:point] + "." + text[point:]
            if point < len(text)
            else text + "0" * (point - len(text))
        )
    return ("-" if sign else "") + body
