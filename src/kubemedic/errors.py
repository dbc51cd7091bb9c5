"""The roots of every error kubemedic raises on purpose.

Each module keeps its own error class (``SnapshotError`` next to the snapshot reader,
``ApiError`` next to the API client) and hangs it under one of the two classes here:

* ``InputError``: something the user supplied is wrong: a snapshot, the configuration file, a
  kubeconfig, an archive URL, a duration or quantity given on the command line. The message says
  what and where, in the user's words; the command line answers every ``InputError`` with exit
  status 2 and that message, never a traceback.
* ``KubemedicError`` (and not ``InputError``): kubemedic could not do its work for another
  reason: the API server answered with an error, a Lease or clock document it cannot read.

Errors that are also ``ValueError`` stay so (``except ValueError`` around a parse still works).

This module imports nothing from kubemedic: it is the lowest layer.
"""

from __future__ import annotations

__all__ = ["DurationError", "InputError", "KubemedicError"]


class KubemedicError(Exception):
    """Every error kubemedic raises on purpose (not a bug): ``str()`` is a full sentence."""


class InputError(KubemedicError):
    """Something the user supplied is wrong; the message names it and says what was expected."""


class DurationError(InputError, ValueError):
    """A duration (``90s``, ``1h30m``) could not be read; the message echoes the value."""
