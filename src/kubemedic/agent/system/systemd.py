"""systemd through ``systemctl``: a unit's state and its restart.

``systemctl`` is run with an argument list, the unit name after ``--`` and checked against
systemd's own rules first (:func:`unit_name_problem`), so no name can be read as an option or
reach a shell. Its environment pins ``TZ=UTC`` and ``LC_ALL=C``, so timestamps and messages
read the same on every node, and sets ``SYSTEMD_IGNORE_CHROOT=1``: in a pod with the host's PID
namespace, ``/proc/1/root`` is the host's root, not the container's, and without it systemctl
takes itself for chrooted and answers ``restart`` and ``reboot`` with "Running in chroot,
ignoring request." and exit status 0, doing nothing.

The state is ``systemctl show --property=... --timestamp=unix -- UNIT``. ``--timestamp=unix``
(systemd 248 and later) prints timestamps as ``@1700000000``; an older ``systemctl`` refuses the
option (``unrecognized option`` before 247, ``Invalid value: unix.`` in 247), and from then on
this host asks without it and reads systemd's default form (``Wed 2026-12-02 10:00:00 UTC``).
``systemctl show`` prints the properties in systemd's order, not the order asked, and leaves
out or leaves empty a timestamp that was never set: :func:`parse_show` takes all of these.

``systemctl restart`` waits for the unit's start job: it fails when the unit fails to start
(``Job for kubelet.service failed because the control process exited with error code.``),
is masked or does not exist. ``--no-ask-password`` keeps it from waiting on a polkit prompt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from kubemedic.agent.host import HostError, UnitStatus
from kubemedic.agent.system import running

__all__ = [
    "PROPERTIES",
    "UNIT_TYPES",
    "Systemctl",
    "parse_show",
    "parse_timestamp",
    "unit_name_problem",
]

#: systemd's unit types (the suffix of every unit name).
UNIT_TYPES = (
    "service",
    "socket",
    "target",
    "device",
    "mount",
    "automount",
    "swap",
    "timer",
    "path",
    "slice",
    "scope",
)
#: The properties asked of ``systemctl show`` (``LoadState`` tells a unit systemd lacks).
PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "InactiveExitTimestamp",
    "ActiveEnterTimestamp",
    "NRestarts",
    "MainPID",
)
#: systemd's ``UNIT_NAME_MAX`` less its terminating NUL.
_NAME_MAX = 255
# systemd's unit_name_is_valid(): a prefix of [0-9A-Za-z:_.\-], an optional "@instance" (which
# may hold "@" too), a dot and the type. A template without its instance names no unit to show
# or restart, so it is refused here.
_UNIT_NAME = re.compile(
    r"[0-9A-Za-z:_.\\-]+(?:@[0-9A-Za-z:_.\\@-]+)?\.(?:" + "|".join(UNIT_TYPES) + r")"
)
_UNIX_TIME = re.compile(r"@(\d+)(?:\.(\d{1,6}))?")
_PRETTY_TIME = re.compile(
    r"(?:[A-Z][a-z]{2} )?(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(?: (\S+))?"
)
_UTC_ZONES = frozenset({"UTC", "GMT", "Z"})


def unit_name_problem(name: str) -> str | None:
    """Why ``name`` is not a systemd unit name this host will use, or None when it is
    (``kubelet.service``, ``getty@tty1.service``; not ``kubelet``, a template or a path)."""
    if not name:
        return "expected a unit name such as kubelet.service, got ''"
    if len(name) > _NAME_MAX:
        return f"a unit name is at most {_NAME_MAX} characters, this one has {len(name)}"
    if not _UNIT_NAME.fullmatch(name):
        return (
            "expected a systemd unit name (letters, digits and ':_.\\-', an optional @instance, "
            f"and a type suffix such as .service), got {name[:200]!r}"
        )
    return None


def parse_timestamp(value: str) -> datetime | None:
    """A ``systemctl show`` timestamp as an aware UTC datetime; None for an empty value (never
    happened) or ``n/a``. Reads ``@1700000000`` (``--timestamp=unix``) and the default
    ``Wed 2026-12-02 10:00:00 UTC`` (``.123456`` microseconds allowed); ``ValueError`` for
    anything else, a zone other than UTC included (systemctl runs with ``TZ=UTC``)."""
    text = value.strip()
    if text in ("", "n/a"):
        return None
    unix = _UNIX_TIME.fullmatch(text)
    if unix:
        seconds, fraction = unix.groups()
        micros = int((fraction or "0").ljust(6, "0"))
        return datetime.fromtimestamp(int(seconds), UTC) + timedelta(microseconds=micros)
    pretty = _PRETTY_TIME.fullmatch(text)
    if pretty is None:
        raise ValueError(f"{text[:200]!r} is not a systemd timestamp")
    stamp, fraction, zone = pretty.groups()
    if zone not in _UTC_ZONES:
        raise ValueError(f"{text[:200]!r} is not in UTC")
    moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return moment + timedelta(microseconds=int((fraction or "0").ljust(6, "0")))


def _count(unit: str, values: dict[str, str], name: str) -> int:
    text = values.get(name, "").strip()
    if not text or text == "[not set]":
        return 0
    if not text.isdigit():
        raise HostError(f"systemctl show {unit}: {name}={text[:200]!r} is not a number")
    return int(text)


def parse_show(unit: str, text: str) -> UnitStatus:
    """The :class:`UnitStatus` in ``systemctl show --property=...``'s output (``Name=value``
    lines, any order, timestamps in either form); :class:`HostError` when the output has no
    ``ActiveState``, a value cannot be read, or ``LoadState=not-found`` (systemd has no such
    unit: a wrong unit name in the settings, not a failed daemon)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        name, equals, value = line.partition("=")
        if equals:
            values[name.strip()] = value
    active_state = values.get("ActiveState", "").strip()
    if not active_state:
        raise HostError(f"systemctl show {unit}: no ActiveState in its output")
    if values.get("LoadState", "").strip() == "not-found":
        raise HostError(f"systemd has no unit {unit} (LoadState=not-found)")
    stamps: dict[str, datetime | None] = {}
    for name in ("InactiveExitTimestamp", "ActiveEnterTimestamp"):
        try:
            stamps[name] = parse_timestamp(values.get(name, ""))
        except ValueError as exc:
            raise HostError(f"systemctl show {unit}: {name}: {exc}") from None
    return UnitStatus(
        unit=unit,
        active_state=active_state,
        sub_state=values.get("SubState", "").strip(),
        started_at=stamps["InactiveExitTimestamp"],
        active_since=stamps["ActiveEnterTimestamp"],
        restarts=_count(unit, values, "NRestarts"),
        main_pid=_count(unit, values, "MainPID"),
    )


def _refuses_unix_timestamps(error: running.CommandError) -> bool:
    """Whether ``systemctl`` failed because it predates ``--timestamp=unix``."""
    said = error.said
    return "--timestamp" in said or (said.startswith("Invalid value") and "unix" in said)


class Systemctl:
    """``systemctl`` on this host: ``program`` is systemctl and its global options, ``prefix``
    (such as ``nsenter --target 1 --mount --``) goes before it; ``query_timeout`` bounds
    ``show``, ``restart_timeout`` ``restart``."""

    def __init__(
        self,
        *,
        program: Sequence[str] = ("systemctl",),
        prefix: Sequence[str] = (),
        query_timeout: timedelta,
        restart_timeout: timedelta,
    ) -> None:
        self.command = (*prefix, *program)
        self.query_timeout = query_timeout
        self.restart_timeout = restart_timeout
        # False once systemctl refused --timestamp=unix (systemd older than 248).
        self.unix_timestamps = True

    @staticmethod
    def environment() -> dict[str, str]:
        """This process's environment with UTC timestamps, C messages, no colours, and no
        chroot detection (which a pod with the host's PID namespace would trip)."""
        return {
            **os.environ,
            "TZ": "UTC",
            "LC_ALL": "C",
            "SYSTEMD_COLORS": "0",
            "SYSTEMD_IGNORE_CHROOT": "1",
        }

    def show_argv(self, unit: str) -> list[str]:
        stamps = ["--timestamp=unix"] if self.unix_timestamps else []
        prop = "--property=" + ",".join(PROPERTIES)
        return [*self.command, "show", "--no-pager", prop, *stamps, "--", unit]

    def restart_argv(self, unit: str) -> list[str]:
        return [*self.command, "restart", "--no-ask-password", "--", unit]

    @staticmethod
    def _checked(unit: str) -> str:
        problem = unit_name_problem(unit)
        if problem:
            raise HostError(f"refusing unit {unit[:200]!r}: {problem}")
        return unit

    def show(self, unit: str) -> UnitStatus:
        """The unit's state (:func:`parse_show`); :class:`HostError` when systemctl fails."""
        unit = self._checked(unit)
        env = self.environment()
        try:
            out = running.run(self.show_argv(unit), timeout=self.query_timeout, env=env)
        except running.CommandError as exc:
            if not (self.unix_timestamps and _refuses_unix_timestamps(exc)):
                raise
            self.unix_timestamps = False
            out = running.run(self.show_argv(unit), timeout=self.query_timeout, env=env)
        return parse_show(unit, out)

    def restart(self, unit: str) -> None:
        """Restart the unit and wait for its start job; :class:`HostError` when it fails."""
        unit = self._checked(unit)
        running.run(self.restart_argv(unit), timeout=self.restart_timeout, env=self.environment())
