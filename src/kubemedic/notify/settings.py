"""The configuration file's ``notify:`` section, read and checked before anything runs.

    notify:
      receivers:
        - name: oncall                      # names the receiver in logs and in the archive
          format: alertmanager              # alertmanager, slack or webhook
          urlFile: /etc/kubemedic/notify/oncall-url   # a Secret mounted as a file
        - name: team-chat
          format: slack
          url: https://hooks.slack.com/services/T000/B000/XXXX
      kinds: [incident, quarantine, hold, storm]
      minSeverity: warning                  # incidents below it are not sent
      risks: false                          # incidents of standing conditions only
      resolveAfter: 10m                     # an incident quiet this long has ended
      updateEvery: 30m                      # a growing group is sent again at most this often
      intervalSeconds: 30s                  # cluster time between rounds
      timeoutSeconds: 10s                   # one HTTP attempt
      attempts: 4                           # per message and round, with back-off between
      backoffSeconds: 1s                    # the first back-off (doubling, jittered, 30s cap)
      externalUrl: ""                       # a link to the dashboard, for the messages

Keys are camelCase (snake_case is accepted too, never both for one setting); an unknown key, a
missing one or a wrong value is a ``ConfigError`` naming the file and the key path
(``kubemedic.yaml: notify.receivers[1].format: expected one of alertmanager, slack, webhook,
got "teams"``). Each receiver has exactly one of ``url`` and ``urlFile``; the file is read when
the configuration is loaded (to check it) and again before every round, so a rotated Secret
takes effect without a restart. kubemedic never reads Secrets through the API: mount the Secret
as a file. URLs are never logged (a Slack URL is its own credential).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubemedic.checks.settings import echo, number, shown
from kubemedic.config import ConfigError, Settings, read_section
from kubemedic.notify.formats import FORMATS
from kubemedic.notify.policy import SubjectKind

__all__ = ["NotifyRun", "Receiver", "defaults_text", "load", "read", "read_url"]

_MAX_URL_FILE = 64 * 1024
_SEVERITIES = ("info", "warning", "critical")


@dataclass(frozen=True, slots=True)
class Receiver:
    """One target: its name, body format, and where its URL is (given or in a file)."""

    name: str
    format: str
    url: str = ""
    url_file: str = ""


@dataclass(frozen=True, slots=True)
class NotifyRun:
    """Notifications inside ``kubemedic run`` (see the module docstring for each setting)."""

    receivers: tuple[Receiver, ...] = ()
    kinds: frozenset[SubjectKind] = frozenset(SubjectKind)
    min_severity: str = "warning"
    risks: bool = False
    resolve_after: timedelta = timedelta(minutes=10)
    update_every: timedelta = timedelta(minutes=30)
    interval_seconds: float = 30.0
    timeout_seconds: float = 10.0
    attempts: int = 4
    backoff_seconds: float = 1.0
    external_url: str = ""


@dataclass(frozen=True, slots=True)
class _Receiver:
    name: str
    format: str
    url: str | None = None
    url_file: str | None = None


@dataclass(frozen=True, slots=True)
class _Section:
    receivers: tuple[_Receiver, ...] = ()
    kinds: tuple[str, ...] = tuple(kind.value for kind in SubjectKind)
    min_severity: str = "warning"
    risks: bool = False
    resolve_after: timedelta = timedelta(minutes=10)
    update_every: timedelta = timedelta(minutes=30)
    interval_seconds: timedelta = timedelta(seconds=30)
    timeout_seconds: timedelta = timedelta(seconds=10)
    attempts: int = number(4, low=1, high=20)
    backoff_seconds: timedelta = timedelta(seconds=1)
    external_url: str = ""


def load(settings: Settings) -> NotifyRun | None:
    """Notifications of a loaded configuration file; None when it has no ``notify:`` section."""
    if settings.notify is None:
        return None
    return read(settings.notify, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> NotifyRun:
    """Validate a ``notify:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: notify"
    section: _Section = read_section(raw, _Section, where=where)
    receivers: list[Receiver] = []
    names: set[str] = set()
    for index, item in enumerate(section.receivers):
        at = f"{where}.receivers[{index}]"
        if not item.name.strip():
            raise ConfigError(f"{at}.name: expected a name, got {echo(item.name)}")
        if item.name in names:
            raise ConfigError(f"{at}.name: {echo(item.name)} names two receivers")
        names.add(item.name)
        if item.format not in FORMATS:
            raise ConfigError(
                f"{at}.format: expected one of {', '.join(FORMATS)}, got {echo(item.format)}"
            )
        if (item.url is None) == (item.url_file is None):
            raise ConfigError(f"{at}: give exactly one of url and urlFile")
        receiver = Receiver(
            name=item.name, format=item.format, url=item.url or "", url_file=item.url_file or ""
        )
        if receiver.url:
            _check_url(receiver.url, where=f"{at}.url")
        else:
            read_url(receiver, where=f"{at}.urlFile")
        receivers.append(receiver)
    kinds: set[SubjectKind] = set()
    for index, kind in enumerate(section.kinds):
        try:
            kinds.add(SubjectKind(kind))
        except ValueError:
            known = ", ".join(k.value for k in SubjectKind)
            raise ConfigError(
                f"{where}.kinds[{index}]: expected one of {known}, got {echo(kind)}"
            ) from None
    if section.min_severity not in _SEVERITIES:
        raise ConfigError(
            f"{where}.minSeverity: expected one of {', '.join(_SEVERITIES)}, "
            f"got {echo(section.min_severity)}"
        )
    for name, value, least in (
        ("intervalSeconds", section.interval_seconds, timedelta(seconds=1)),
        ("timeoutSeconds", section.timeout_seconds, timedelta(milliseconds=100)),
        ("resolveAfter", section.resolve_after, timedelta(seconds=1)),
    ):
        if value < least:
            raise ConfigError(f"{where}.{name}: expected at least {shown(least)}")
    if section.external_url:
        _check_url(section.external_url, where=f"{where}.externalUrl")
    return NotifyRun(
        receivers=tuple(receivers),
        kinds=frozenset(kinds),
        min_severity=section.min_severity,
        risks=section.risks,
        resolve_after=section.resolve_after,
        update_every=section.update_every,
        interval_seconds=section.interval_seconds.total_seconds(),
        timeout_seconds=section.timeout_seconds.total_seconds(),
        attempts=section.attempts,
        backoff_seconds=max(section.backoff_seconds.total_seconds(), 0.001),
        external_url=section.external_url,
    )


def _check_url(url: str, *, where: str) -> None:
    """An http(s) URL with a host; the message never echoes it (it may hold a token)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: expected an http:// or https:// URL with a host")


def read_url(receiver: Receiver, *, where: str = "") -> str:
    """The receiver's URL: given, or the first line of its ``urlFile`` (a regular file of at
    most 64 KiB). ``ConfigError`` naming ``where`` (or the receiver) and the file otherwise."""
    if receiver.url:
        return receiver.url.strip()
    where = where or f"notify receiver {receiver.name}: urlFile"
    path = Path(receiver.url_file)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{where}: {path} is not a regular file")
        if info.st_size > _MAX_URL_FILE:
            raise ConfigError(f"{where}: {path} holds more than {_MAX_URL_FILE} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{where}: cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: {path} is not UTF-8 text") from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ConfigError(f"{where}: {path} is empty")
    _check_url(lines[0], where=f"{where} ({path})")
    return lines[0]


def defaults_text() -> str:
    """The defaults as a ``notify:`` section (for ``kubemedic config show-defaults``)."""
    d = _Section()
    return f"""notify:
  receivers: []                # each: name, format (alertmanager, slack, webhook), url or urlFile
  kinds: [{", ".join(d.kinds)}]
  minSeverity: {d.min_severity}           # incidents below it are not sent
  risks: {str(d.risks).lower()}                 # incidents of standing conditions only
  resolveAfter: {shown(d.resolve_after)}           # an incident quiet this long has ended
  updateEvery: {shown(d.update_every)}            # a growing group is sent again at most this often
  intervalSeconds: {shown(d.interval_seconds)}        # cluster time between rounds
  timeoutSeconds: {shown(d.timeout_seconds)}         # one HTTP attempt
  attempts: {d.attempts}                  # per message and round
  backoffSeconds: {shown(d.backoff_seconds)}          # the first back-off (doubling, 30s cap)
  externalUrl: ""
"""
