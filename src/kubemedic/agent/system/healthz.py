"""The kubelet probe: ``GET /healthz`` on the kubelet's local health port (10248 by default).

The kubelet answers ``200`` with the body ``ok`` when it is healthy, ``500`` with the failing
check's name when it is not (its sync loop stalled, for one). Healthy means exactly that: 200
and ``ok``. Connecting, sending and reading share one deadline, so a kubelet that accepts the
connection and never answers costs the caller ``timeout`` seconds, no more. The request goes
straight to the address (``http.client``: no proxy from the environment, no redirects).
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

from kubemedic.agent.host import Probe
from kubemedic.agent.system.cri import seconds

__all__ = ["probe_healthz"]

#: How much of the body is read (``ok``, or the kubelet's list of failed checks).
_MAX_BODY = 4096


def _first_line(body: bytes) -> str:
    for line in body.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def probe_healthz(url: str, timeout: float) -> Probe:
    """``GET url`` within ``timeout`` seconds; healthy on ``200`` with the body ``ok``."""
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port}"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + timeout

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(left())
        connection.request("GET", path, headers={"User-Agent": "kubemedic-agent"})
        if connection.sock is not None:
            connection.sock.settimeout(left())
        response = connection.getresponse()
        if connection.sock is not None:
            connection.sock.settimeout(left())
        body = response.read(_MAX_BODY)
    except TimeoutError:
        return Probe(False, f"no answer from {where} within {seconds(timeout)}")
    except ConnectionRefusedError:
        return Probe(False, f"connection refused at {where}")
    except OSError as exc:
        return Probe(False, f"cannot reach {where}: {exc.strerror or exc}")
    except http.client.HTTPException as exc:
        return Probe(False, f"{where} did not answer in HTTP: {type(exc).__name__}")
    finally:
        connection.close()
    if response.status != 200:
        said = _first_line(body)
        return Probe(False, f"HTTP {response.status}" + (f": {said}" if said else ""))
    if body.strip() != b"ok":
        return Probe(False, f"HTTP 200 with {_first_line(body)[:60]!r} instead of 'ok'")
    return Probe(True, "ok")
