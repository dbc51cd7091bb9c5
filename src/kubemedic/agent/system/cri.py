"""The container runtime probe: one CRI call on the runtime's socket, as ``crictl pods`` makes.

The call is ``/runtime.v1.RuntimeService/ListPodSandbox`` with an empty request (no filter),
sent as raw bytes on a fresh gRPC channel to the unix socket, with the caller's deadline and no
retries. The runtime is healthy when it answers. Nothing of the answer is needed but its length:
the number of pod sandboxes (field 1 of ``ListPodSandboxResponse``, repeated) goes into the
detail.

A missing socket, a socket nobody listens on (a runtime that died leaves its socket file
behind), no answer before the deadline, or any gRPC error is an unhealthy :class:`Probe` whose
detail says which, in words. ``UNIMPLEMENTED`` means the runtime does not serve CRI v1, which
the kubelet needs since Kubernetes 1.26: unhealthy too, and a restart will not help.
"""

from __future__ import annotations

import stat
from pathlib import Path

import grpc

from kubemedic.agent.host import Probe

__all__ = ["LIST_POD_SANDBOX", "count_sandboxes", "probe_cri"]

LIST_POD_SANDBOX = "/runtime.v1.RuntimeService/ListPodSandbox"
#: The largest answer taken (crictl's limit; a node with many pods answers a long list).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.enable_retries", 0),
    ("grpc.enable_http_proxy", 0),
)


def seconds(timeout: float) -> str:
    """``10s``, ``0.5s``: a probe's timeout in a detail."""
    return f"{timeout:g}s"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def count_sandboxes(message: bytes) -> int:
    """How many pod sandboxes a ``ListPodSandboxResponse`` holds (its field 1 entries); other
    fields are skipped. ``ValueError`` when ``message`` is not a protobuf message."""
    count = at = 0
    while at < len(message):
        key, at = _varint(message, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(message, at)
        elif wire == 1:
            at += 8
        elif wire == 2:
            length, at = _varint(message, at)
            at += length
            count += field == 1
        elif wire == 5:
            at += 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        if at > len(message) or field == 0:
            raise ValueError("truncated or malformed protobuf message")
    return count


def _failed(error: grpc.RpcError, socket: Path, timeout: float) -> Probe:
    if not isinstance(error, grpc.Call):
        return Probe(False, f"the CRI call on {socket} failed: {str(error)[:200]}")
    code = error.code()
    details = " ".join((error.details() or "").split())[:200]
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return Probe(False, f"no answer on {socket} within {seconds(timeout)}")
    if code == grpc.StatusCode.UNAVAILABLE:
        said = "connection refused" if "refused" in details.lower() else details
        return Probe(False, f"the runtime is unavailable on {socket}: {said}")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return Probe(False, f"the runtime on {socket} does not serve CRI v1 (UNIMPLEMENTED)")
    name = code.name if code is not None else "UNKNOWN"
    said = f"ListPodSandbox on {socket} failed: {name}"
    return Probe(False, f"{said}: {details}" if details else said)


def probe_cri(socket: Path, timeout: float) -> Probe:
    """Ask the runtime on ``socket`` for its pod sandboxes within ``timeout`` seconds."""
    try:
        mode = socket.stat().st_mode
    except FileNotFoundError:
        return Probe(False, f"no CRI socket at {socket}")
    except OSError as exc:
        return Probe(False, f"cannot reach {socket}: {exc.strerror or exc}")
    if not stat.S_ISSOCK(mode):
        return Probe(False, f"{socket} is not a socket")
    with grpc.insecure_channel(f"unix://{socket}", options=list(_CHANNEL_OPTIONS)) as channel:
        call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(LIST_POD_SANDBOX)
        try:
            answer = call(b"", timeout=timeout)
        except grpc.RpcError as exc:
            return _failed(exc, socket, timeout)
    try:
        count = count_sandboxes(bytes(answer))
    except ValueError:
        return Probe(True, "ok")
    return Probe(True, f"ok, {count} pod sandbox{'es' if count != 1 else ''}")
