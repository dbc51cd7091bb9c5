"""The API server's HTTP layer: routing and handlers, watch streams, responses, fault injection,
the request log (:mod:`.recording`).

It sees the server as a :class:`~.responses.Backend` (storage, writer, registry, clock...), so
it sits below the server that assembles it.

May import: the registry and the independent parts of :mod:`kubemedic.sim.apiserver`,
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`.
"""

from kubemedic.sim.apiserver.http.faults import Faults
from kubemedic.sim.apiserver.http.handling import Handler
from kubemedic.sim.apiserver.http.recording import ApiCall, RequestLog
from kubemedic.sim.apiserver.http.responses import Backend

__all__ = ["ApiCall", "Backend", "Faults", "Handler", "RequestLog"]
