"""The rollback spec: which directories a reboot throws away, which it keeps, and the tmpfs.

A spec is a YAML or JSON mapping (every key optional; a key left out takes its default)::

    overlay: [/etc, /home, /opt, /usr, /var]      # OverlayFS with a tmpfs upper dir over each
    keep:                                          # bound back from the disk: changes persist
      [/etc/kubernetes, /etc/cni/net.d, /opt/cni/bin, /usr/libexec/kubernetes,
       /var/lib/containerd, /var/lib/kubelet, /var/log]
    binds: []              # extra bind mounts: [{source: /srv/persist/ssh, target: /etc/ssh}]
    tmpfsSize: "10%"       # the tmpfs holding every upper dir: a quantity (2Gi) or a percent of RAM
    runtimeRoot: /var/lib/containerd   # the container runtime's state (CRI-O: /var/lib/containers)

The defaults follow the CyberAgent talk (seed 002): the AKEv2 figure overlays ``/etc``, ``/home``,
``/usr`` and ``/var``; ``/opt`` is overlaid too so that keeping ``/opt/cni/bin`` means
something. The kept list is the talk's (``/var/log`` for investigation, ``/var/lib/containerd``
for images and emptyDir-like state, ``/etc/kubernetes`` written by kubeadm, the CNI directories
whose installation races the overlay) plus ``/var/lib/kubelet`` (see ``KUBELET_STATE``).

Validation (each refusal is a ``SpecError``, an ``InputError``: exit 2, naming the key):

* every path is absolute and canonical (no ``.``, ``..`` or ``//``), made only of
  ``A-Z a-z 0-9 . _ / + @ -`` (OverlayFS mount options cannot carry ``,``, ``:`` or spaces),
  and neither ``/`` nor ``/proc``, ``/sys``, ``/dev``, ``/run`` or anything under them;
* overlaid directories are not nested (an overlay inside another would hide its lower dir);
* an overlaid directory equal to or inside a kept one is refused (it could not both persist and
  be thrown away);
* a kept directory must lie strictly inside an overlaid one: elsewhere it is on the disk
  already and keeping it means nothing (a mistake worth hearing about); kept directories are not
  nested in each other (the outer one keeps the inner);
* a bind's target lies strictly inside an overlaid directory, not inside a kept one or another
  bind's target; its source is not its target;
* ``KUBELET_STATE`` and ``runtimeRoot``: each one that lies inside an overlaid directory must be
  kept (itself or a kept ancestor).

Pure: values in, a ``RollbackSpec`` out; no I/O. May import: :mod:`kubemedic.model`,
:mod:`kubemedic.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from kubemedic.errors import InputError
from kubemedic.model import documents
from kubemedic.model.quantities import QuantityError, parse_quantity

__all__ = [
    "DEFAULT_KEEP",
    "DEFAULT_OVERLAY",
    "KUBELET_STATE",
    "Bind",
    "RollbackSpec",
    "SpecError",
    "load_spec",
    "parse_spec",
]


class SpecError(InputError, ValueError):
    """A rollback spec kubemedic refuses; the message names the key and the reason."""


DEFAULT_OVERLAY: Final = ("/etc", "/home", "/opt", "/usr", "/var")
DEFAULT_KEEP: Final = (
    "/etc/kubernetes",
    "/etc/cni/net.d",
    "/opt/cni/bin",
    "/usr/libexec/kubernetes",
    "/var/lib/containerd",
    "/var/lib/kubelet",
    "/var/log",
)
DEFAULT_TMPFS_SIZE: Final = "10%"
DEFAULT_RUNTIME_ROOT: Final = "/var/lib/containerd"

KUBELET_STATE: Final = {
    "/etc/kubernetes": (
        "kubeadm join writes the kubelet's kubeconfig (kubelet.conf) and the cluster CA "
        "(pki/ca.crt) there, and kubeadm upgrade rewrites them; overlaying it without keeping it "
        "silently undoes every later change at the next reboot"
    ),
    "/var/lib/kubelet": (
        "kubeadm join writes config.yaml and kubeadm-flags.env there, the kubelet rotates its "
        "client certificate into pki/kubelet-client-current.pem (which kubelet.conf points at) "
        "and keeps pod volumes (emptyDir) under pods/; overlaid, the rotated certificate is lost "
        "at each reboot (the node cannot authenticate once the join-time one expires) and "
        "emptyDir data lands in RAM"
    ),
}
"""What the kubelet needs to persist, from kubeadm's documentation (``kubeadm join phase
kubelet-start``; "Certificate management with kubeadm": kubelet.conf refers to the rotated
``/var/lib/kubelet/pki/kubelet-client-current.pem``), with the reason shown when a spec overlays
one without keeping it."""

_RUNTIME_REASON: Final = (
    "it is the container runtime's root: overlaid, images and container layers land in RAM and "
    "the runtime's overlayfs snapshotter cannot use an overlay as its upper layer"
)

_FORBIDDEN: Final = ("/proc", "/sys", "/dev", "/run")
_SAFE: Final = re.compile(r"[A-Za-z0-9._/+@-]+")
_KEYS: Final = ("overlay", "keep", "binds", "tmpfsSize", "runtimeRoot")


@dataclass(frozen=True, slots=True)
class Bind:
    """An extra bind mount: ``source`` (read on the disk, beneath any overlay) onto ``target``
    (a directory inside an overlaid one); both directories, made on the disk when missing."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class RollbackSpec:
    """A validated spec (build one with ``parse_spec``; the defaults are the talk's)."""

    overlay: tuple[str, ...] = DEFAULT_OVERLAY
    keep: tuple[str, ...] = DEFAULT_KEEP
    binds: tuple[Bind, ...] = ()
    tmpfs_size: str = DEFAULT_TMPFS_SIZE
    runtime_root: str = DEFAULT_RUNTIME_ROOT

    def tmpfs_option(self) -> str:
        """The tmpfs ``size=`` value: ``10%`` as it is, a quantity in bytes."""
        return tmpfs_size_option(self.tmpfs_size)

    def overlay_of(self, path: str) -> str | None:
        """The overlaid directory ``path`` lies in (or is), if any."""
        return next((top for top in self.overlay if _within(path, top)), None)

    def ordered_keep(self) -> tuple[str, ...]:
        """The kept directories, outer ones first (the order they are mounted in)."""
        return tuple(sorted(self.keep, key=lambda path: (path.count("/"), path)))

    def as_document(self) -> dict[str, Any]:
        """The spec as the YAML/JSON document that reads back to it."""
        return {
            "overlay": list(self.overlay),
            "keep": list(self.keep),
            "binds": [{"source": bind.source, "target": bind.target} for bind in self.binds],
            "tmpfsSize": self.tmpfs_size,
            "runtimeRoot": self.runtime_root,
        }


def _within(path: str, top: str) -> bool:
    """``path`` is ``top`` or lies under it."""
    return path == top or path.startswith(top + "/")


def _inside(path: str, top: str) -> bool:
    """``path`` lies strictly under ``top``."""
    return path.startswith(top + "/")


def load_spec(text: str, *, where: str) -> RollbackSpec:
    """The spec in ``text`` (YAML, of which JSON is a part); an empty document is the defaults."""
    value = documents.load_yaml(text, where=where)
    return parse_spec({} if value is None else value, where=where)


def parse_spec(value: object, *, where: str = "spec") -> RollbackSpec:
    """Validate a parsed document (see the module's docstring); ``SpecError`` on a refusal."""
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: expected a mapping, got {documents.value_kind(value)}")
    unknown = sorted(str(key) for key in value if key not in _KEYS)
    if unknown:
        raise SpecError(
            f"{where}: unknown key(s) {', '.join(unknown)}; expected {', '.join(_KEYS)}"
        )
    overlay = _paths(value, "overlay", DEFAULT_OVERLAY, where=where)
    keep = _paths(value, "keep", DEFAULT_KEEP, where=where)
    binds = _binds(value.get("binds", []), where=where)
    size = value.get("tmpfsSize", DEFAULT_TMPFS_SIZE)
    if isinstance(size, int) and not isinstance(size, bool):
        size = str(size)
    if not isinstance(size, str):
        raise SpecError(f"{where}: tmpfsSize: expected a quantity or a percent, got {size!r}")
    tmpfs_size_option(size, where=f"{where}: tmpfsSize")
    runtime = _path(value.get("runtimeRoot", DEFAULT_RUNTIME_ROOT), f"{where}: runtimeRoot")
    spec = RollbackSpec(overlay, keep, binds, size, runtime)
    _check(spec, where=where)
    return spec


def tmpfs_size_option(size: str, *, where: str = "tmpfsSize") -> str:
    """``size=`` for tmpfs: a percent of RAM (1% to 100%) as given, or a Kubernetes quantity
    (``512Mi``, ``2G``) as whole bytes of at least 1Mi."""
    text = size.strip()
    if text.endswith("%"):
        number = text[:-1]
        if not number.isdigit() or not 1 <= int(number) <= 100:
            raise SpecError(f"{where}: {size!r}: expected a whole percent of RAM from 1% to 100%")
        return f"{int(number)}%"
    try:
        amount = parse_quantity(text).value
    except QuantityError:
        raise SpecError(
            f"{where}: {size!r}: expected a quantity (512Mi, 2Gi, 1G) or a percent of RAM (10%)"
        ) from None
    if amount < 1 << 20:
        raise SpecError(f"{where}: {size!r}: expected at least 1Mi (the tmpfs holds every change)")
    return str(int(amount if amount.denominator == 1 else Fraction(int(amount) + 1)))


def _path(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{where}: expected an absolute path, got {documents.value_kind(value)}")
    path = value[:-1] if len(value) > 1 and value.endswith("/") else value
    if not path.startswith("/"):
        raise SpecError(f"{where}: {value!r}: expected an absolute path (starting with /)")
    if _SAFE.fullmatch(path) is None:
        raise SpecError(
            f"{where}: {value!r}: only letters, digits and . _ / + @ - are allowed "
            "(OverlayFS mount options cannot carry commas, colons or spaces)"
        )
    if path == "/":
        raise SpecError(f"{where}: '/': the root itself cannot be overlaid, kept or bound")
    parts = path.split("/")[1:]
    if "" in parts or "." in parts or ".." in parts:
        raise SpecError(f"{where}: {value!r}: expected a canonical path (no //, . or ..)")
    for system in _FORBIDDEN:
        if _within(path, system):
            raise SpecError(
                f"{where}: {value!r}: {system} is the kernel's or the boot's own "
                "(API filesystems and runtime state), never overlaid, kept or bound"
            )
    return path


def _paths(
    value: Mapping[str, Any], key: str, default: tuple[str, ...], *, where: str
) -> tuple[str, ...]:
    if key not in value:
        return default
    items = value[key]
    if not isinstance(items, list):
        raise SpecError(
            f"{where}: {key}: expected a list of paths, got {documents.value_kind(items)}"
        )
    paths = tuple(_path(item, f"{where}: {key}[{index}]") for index, item in enumerate(items))
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise SpecError(f"{where}: {key}: {path} is listed twice")
        seen.add(path)
    return paths


def _binds(items: object, *, where: str) -> tuple[Bind, ...]:
    if not isinstance(items, list):
        raise SpecError(
            f"{where}: binds: expected a list of {{source, target}}, got "
            f"{documents.value_kind(items)}"
        )
    binds: list[Bind] = []
    for index, item in enumerate(items):
        here = f"{where}: binds[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"source", "target"}:
            raise SpecError(f"{here}: expected a mapping with exactly source and target")
        binds.append(
            Bind(_path(item["source"], f"{here}.source"), _path(item["target"], f"{here}.target"))
        )
    return tuple(binds)


def _check(spec: RollbackSpec, *, where: str) -> None:
    if not spec.overlay:
        raise SpecError(f"{where}: overlay: expected at least one directory to overlay")
    for index, top in enumerate(spec.overlay):
        for other in spec.overlay[index + 1 :]:
            if _within(top, other) or _within(other, top):
                outer, inner = (other, top) if _within(top, other) else (top, other)
                raise SpecError(
                    f"{where}: overlay: {inner} is inside {outer}; overlaid directories cannot be "
                    "nested (overlay the outer one only)"
                )
    for top in spec.overlay:
        for kept in spec.keep:
            if _within(top, kept):
                relation = "the kept directory" if top == kept else "inside the kept directory"
                raise SpecError(
                    f"{where}: overlay {top} is {relation} {kept}: a directory cannot both "
                    "persist and be thrown away at reboot"
                )
    for kept in spec.keep:
        if spec.overlay_of(kept) is None:
            raise SpecError(
                f"{where}: keep {kept} is not inside any overlaid directory "
                f"({', '.join(spec.overlay)}): it is on the disk already; remove it from keep"
            )
        for outer in spec.keep:
            if _inside(kept, outer):
                raise SpecError(f"{where}: keep {kept} is inside the kept {outer}, which keeps it")
    _check_binds(spec, where=where)
    needed = {**KUBELET_STATE, spec.runtime_root: _RUNTIME_REASON}
    for path, reason in needed.items():
        covering = spec.overlay_of(path)
        if covering is None or any(_within(path, kept) for kept in spec.keep):
            continue
        key = "runtimeRoot " if path == spec.runtime_root and path not in KUBELET_STATE else ""
        raise SpecError(
            f"{where}: overlay {covering} without keeping {key}{path}: {reason}; add {path} to keep"
        )


def _check_binds(spec: RollbackSpec, *, where: str) -> None:
    targets = [bind.target for bind in spec.binds]
    for index, bind in enumerate(spec.binds):
        here = f"{where}: binds[{index}]"
        if bind.source == bind.target:
            raise SpecError(f"{here}: source and target are both {bind.target}; use keep for that")
        top = spec.overlay_of(bind.target)
        if top is None or top == bind.target:
            raise SpecError(
                f"{here}: target {bind.target} must lie inside an overlaid directory "
                f"({', '.join(spec.overlay)}); elsewhere the disk keeps it already"
            )
        for kept in spec.keep:
            if _within(bind.target, kept) or _inside(kept, bind.target):
                raise SpecError(
                    f"{here}: target {bind.target} overlaps the kept directory {kept}; a bind "
                    "and a keep cannot share a directory"
                )
        for other in targets[:index]:
            if _within(bind.target, other) or _within(other, bind.target):
                raise SpecError(f"{here}: target {bind.target} overlaps the target {other}")
