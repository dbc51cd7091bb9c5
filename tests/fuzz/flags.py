"""Command-line flags of every command, found by typer's introspection (as tests/cli/test_app.py
does), each given hostile values: numbers, NaN, negative, huge, empty, non-UTF-8 bytes, far
dates and times without a zone."""

from __future__ import annotations

import functools
import os
from typing import Any

import typer
from hypothesis import strategies as st

from tests.fuzz.harness import Case

VALUES = (
    "0", "-1", "-5m", "nan", "inf", "-inf", "1e-300", "1e308", "99999", "", " ", "x",
    "12XB", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2024-12-10T10:30:00",
    "2024-02-30T00:00:00Z", "1h30", "PT2M", "app in (a", os.fsdecode(b"\xff\xfe"),
    "a" * 300, "../../etc/passwd", "-", "--help-not",
)  # fmt: skip
"""Values no flag should turn into a traceback or a hang."""

# Flags whose value names a file written, a server to reach or a loop to run: driven elsewhere.
SKIPPED = {
    "--kubeconfig-out",
    "--clouds-out",
    "--snapshot-out",
    "--out",
    "--archive",
    "--serve",
    "--hold",
}
# Commands that run until stopped (``run``) or serve: driven with a short bound elsewhere.
SKIPPED_COMMANDS = {("run",), ("sim", "serve"), ("demo",)}


def command_paths(group: Any = None, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    from kubemedic.cli import app

    group = group if group is not None else typer.main.get_command(app)
    paths: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        if hasattr(command, "commands"):
            paths.extend(command_paths(command, path))
        else:
            paths.append(path)
    return paths


@functools.cache
def options() -> list[tuple[tuple[str, ...], str]]:
    """(command path, flag) for every option taking a value of every command."""
    from kubemedic.cli import app

    root = typer.main.get_command(app)
    found: list[tuple[tuple[str, ...], str]] = []
    for path in command_paths():
        if path in SKIPPED_COMMANDS:
            continue
        command: Any = root
        for word in path:
            command = command.commands[word]
        for param in command.params:
            flags = [o for o in getattr(param, "opts", []) if o.startswith("--")]
            if not flags or getattr(param, "is_flag", False) or flags[0] in SKIPPED:
                continue
            found.append((path, flags[0]))
    return found


def context(path: tuple[str, ...]) -> tuple[str, ...]:
    """What a command needs besides the flag under test, so it gets as far as reading it."""
    if path == ("scan",):
        return ("--snapshot", "{d}/snap")
    if path == ("sim", "run"):
        return ("healthy", "--until", "1m")
    if path in (("events",), ("oom",), ("incidents", "list")):
        return ("--db", "{d}/kubemedic.db")
    if path in (("incidents", "show"), ("incidents", "export")):
        return ("abc", "--db", "{d}/kubemedic.db")
    if path == ("nodes", "release"):  # never a real cluster: a kubeconfig that is not there
        return ("worker-1", "--kubeconfig", "{d}/no-kubeconfig", "--db", "{d}/kubemedic.db")
    if path == ("agent",):  # one round, never a real cluster
        return ("--once", "--node", "worker-1", "--kubeconfig", "{d}/no-kubeconfig")
    if path == ("drift",):  # never a real cluster
        return ("--git", "{d}", "--kubeconfig", "{d}/no-kubeconfig")
    if path == ("rollback", "render"):
        return ("--out", "{d}/rendered")
    return ()


@functools.cache
def archive_bytes() -> bytes:
    """A real archive (incident 3, as tests/store builds it), for the archive commands."""
    import tempfile
    from pathlib import Path

    from tests.store.archived import incident_archive

    with tempfile.TemporaryDirectory() as name:
        return incident_archive(Path(name) / "kubemedic.db").read_bytes()


def needs(path: tuple[str, ...]) -> tuple[tuple[str, bytes], ...]:
    """The files a command's context names: the small snapshot, or the archive."""
    from tests.fuzz.documents import snapshot_files

    if path[0] == "scan":
        return snapshot_files()
    if "--db" in context(path[:2]) or "--db" in path:
        return (("kubemedic.db", archive_bytes()),)
    return ()


@st.composite
def flag_cases(draw: st.DrawFn) -> Case:
    path, flag = draw(st.sampled_from(options()))
    value = draw(st.sampled_from(VALUES))
    slow = path == ("sim", "run")
    return Case(
        "flags",
        f"{' '.join(path)} {flag} {value[:40]!r}",
        (*path, *context(path), flag, value),
        needs(path),
        valid=None,
        timeout=30.0 if slow else 20.0,
        inprocess=not slow,
    )


def flag_catalogue() -> list[Case]:
    """The issue's bad flag values: each exits 2 naming the flag."""

    scan = ("scan", "--snapshot", "{d}/snap")
    sim = ("sim", "run", "healthy")
    bad: list[tuple[tuple[str, ...], str, str]] = [
        (scan, "--at", "0001-01-01T00:00:00Z"),
        (scan, "--at", "2024-12-10T10:30:00"),
        (scan, "--at", "yesterday"),
        (sim, "--until", "inf"),
        (sim, "--until", "-5m"),
        (sim, "--speed", "nan"),
        (sim, "--speed", "1e-300"),
        (sim, "--speed", "-1"),
        ((*sim, "--serve", "--until", "1m"), "--port", "99999"),
        ((*sim, "--serve", "--until", "1m"), "--port", "-1"),
        (("sim", "serve"), "--port", "99999"),
        (("sim", "serve"), "--port", "-1"),
        (("sim", "serve"), "--event-ttl", "-5m"),
        (("sim", "serve"), "--history", "-1"),
        (("sim", "serve"), "--speed", "nan"),
        (("sim", "serve"), "--fault", "unknown=1"),
        (("sim", "serve"), "--fault", "error-rate=2"),
        (("sim", "serve"), "--fault", "error-rate"),
        (("events", "--db", "{d}/kubemedic.db"), "--since", "2024-12-10T10:30:00"),
        (("events", "--db", "{d}/kubemedic.db"), "--since", "-5m"),
        (("oom", "--db", "{d}/kubemedic.db"), "--until", "nan"),
        # Bytes that are not UTF-8 (handed over as surrogates) in a name or a filter.
        (("incidents", "list", "--db", "{d}/kubemedic.db"), "--cluster", "\udcff\udcfe"),
        (("events", "--db", "{d}/kubemedic.db"), "--namespace", "caf\udce9"),
        (("oom", "--db", "{d}/kubemedic.db"), "--cluster", "\udc80"),
    ]
    unknown: list[tuple[tuple[str, ...], str, str]] = [
        (scan, "--at", "9999-12-31T23:59:59Z"),
        (sim, "--speed", "inf"),
        (("events", "--db", "{d}/kubemedic.db"), "--since", "0001-01-01T00:00:00Z"),
    ]
    cases = []
    # Far but meaningful values (`--since 0001-01-01`: everything; `--at 9999-...`; `--speed
    # inf`: as fast as possible) may be accepted: only that they keep the contract is checked.
    for prefix, flag, value in unknown:
        cases.append(
            Case("flags", f"{prefix[0]} {flag} {value!r}", (*prefix, flag, value), needs(prefix))
        )
    for prefix, flag, value in bad:
        serve = prefix[:2] == ("sim", "serve")
        cases.append(
            Case(
                "flags",
                f"{' '.join(p for p in prefix if '{' not in p)} {flag} {value!r}",
                (*prefix, flag, value),
                needs(prefix),
                valid=False,
                names=flag,
                timeout=15.0 if serve or prefix[0] == "sim" else 20.0,
            )
        )
    return cases
