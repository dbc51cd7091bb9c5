"""Filesystem rollback: tmpfs overlays that make a reboot a clean slate (seed 002's talk).

* :mod:`kubemedic.rollback.spec` (pure): the declarative spec (what to overlay, what to keep,
  extra binds, the tmpfs size), its defaults and its validation.
* :mod:`kubemedic.rollback.render`: the overlay script, its systemd unit and the cloud-init
  snippet rendered from a spec, and writing them.
* :mod:`kubemedic.rollback.mountinfo` (pure): reading ``/proc/self/mountinfo``.
* :mod:`kubemedic.rollback.status`: what is overlaid on this node and what a reboot would throw
  away.
* :mod:`kubemedic.rollback.verify` and :mod:`kubemedic.rollback.proving`: proving the rendered
  script on this machine in a private mount namespace.

The operators' guide is docs/rollback.md.

May import: :mod:`kubemedic.output`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the
simulator, the daemon or the command line.
"""

__all__ = ["spec"]
