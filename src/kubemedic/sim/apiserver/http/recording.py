"""Which API calls a client made, as kube-apiserver's authorizer sees them.

RBAC judges a request by its *request attributes* (``k8s.io/apiserver``'s ``RequestInfoFactory``),
not by its URL: the verb, the API group, the resource, the subresource and the namespace. The
verb comes from the HTTP method and the path:

- ``GET`` of a named object is ``get``; of a collection ``list``, or ``watch`` with
  ``watch=true`` (a named object with ``watch=true`` is a ``watch`` too, limited to that name);
- ``POST`` is ``create`` (``pods/eviction`` and ``pods/binding`` included); ``PUT`` ``update``;
  ``PATCH`` ``patch`` (server-side apply included);
- ``DELETE`` of a named object is ``delete``, of a collection ``deletecollection``.

A :class:`RequestLog` set on the emulator (``ApiServer.request_log``) receives one
:class:`ApiCall` per request to a served resource, answered or refused alike (an authorizer sees
the refused ones too), with the client's ``User-Agent`` so that a test can tell components
apart. Discovery (``/api``, ``/apis/...`` group and version documents), ``/version``,
``/openapi`` and the health endpoints are left out: every authenticated user may read them
(the ``system:discovery`` and ``system:public-info-viewer`` roles).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ApiCall", "RequestLog", "request_verb"]


@dataclass(frozen=True, slots=True, order=True)
class ApiCall:
    """One request's RBAC attributes (``namespace`` empty for cluster-scoped resources and for
    requests across all namespaces)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    user_agent: str = ""

    @property
    def rule(self) -> tuple[str, str, str, str]:
        """``(verb, group, resource[/subresource], namespace)``: what a Role's rule grants."""
        name = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return self.verb, self.group, name, self.namespace


def request_verb(method: str, *, named: bool, watch: bool) -> str:
    """The authorizer's verb for an HTTP ``method`` on a named object or a collection
    (lower-cased method for anything else, which RBAC would not match)."""
    if method == "GET":
        return "watch" if watch else ("get" if named else "list")
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


@dataclass
class RequestLog:
    """The calls made, in order."""

    calls: list[ApiCall] = field(default_factory=list)

    def add(self, call: ApiCall) -> None:
        self.calls.append(call)

    def rules(self, *, user_agent: str | None = None) -> set[tuple[str, str, str, str]]:
        """The distinct :attr:`ApiCall.rule` of the calls (of one client, by the start of its
        ``User-Agent``, when given)."""
        return {
            call.rule
            for call in self.calls
            if user_agent is None or call.user_agent.startswith(user_agent)
        }
