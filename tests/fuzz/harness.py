"""Run the command line as the user does and judge the outcome against the contract of issue 12.

``run_cli`` runs ``kubemedic.cli.main(argv)`` in a fresh interpreter (the checkout under test on
``PYTHONPATH``), so a hang is killed at the time bound and counted, and nothing a case does can
hurt the test process. Start-up costs ~0.3 s (``startup_seconds``). ``run_cli_inprocess`` runs
``main`` in this process under a SIGALRM watchdog, for the cheap cases that can neither block in
a system call nor exhaust memory (configs, flags, small snapshots): ~10x more cases per second.

``violations`` names each way an outcome breaks the contract (the classes ``bench/fuzz.py``
counts); ``assert_contract`` fails a test with them.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TypeVar
from unittest import mock

from hypothesis import HealthCheck, Phase, settings

import kubemedic

SRC = Path(kubemedic.__file__).resolve().parents[1]
"""The ``src`` directory of the checkout under test (the one ``import kubemedic`` found)."""

DEFAULT_TIMEOUT = 20.0
PYTHON_WORDING = (
    "Traceback",
    "NoneType",
    "ValueError(",
    "TypeError(",
    "KeyError(",
    "Input should be",
    "validation error for",
    "object has no attribute",
    "not subscriptable",
    "[Errno",
)
"""Wording of Python or pydantic that an error message for a user must not carry."""

_CLEARED_ENV = ("KUBECONFIG", "KUBEMEDIC_DB", "KUBEMEDIC_DEBUG", "KUBEMEDIC_FUZZ_EXAMPLES")
T = TypeVar("T")
_LAUNCH = "from kubemedic.cli import main; import sys; main(sys.argv[1:])"


@dataclass(frozen=True)
class Outcome:
    """How one run ended: exit code (None when killed at the bound), stdout, stderr, time."""

    code: int | None
    out: str
    err: str
    seconds: float
    timeout: float = DEFAULT_TIMEOUT

    @property
    def timed_out(self) -> bool:
        return self.code is None

    def first_err_line(self) -> str:
        lines = self.err.strip().splitlines()
        return lines[0][:200] if lines else ""


@dataclass(frozen=True)
class Case:
    """One input to drive: ``argv`` (``{d}`` in it stands for the case's own directory), the
    ``files`` to write there first, whether the input is ``valid`` (None: unknown), what an error
    must ``names``, and the time bound."""

    path: str
    label: str
    argv: tuple[str, ...]
    files: tuple[tuple[str, bytes], ...] = ()
    valid: bool | None = None
    names: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    inprocess: bool = False
    memory: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


def environment(home: Path | None = None) -> dict[str, str]:
    """The environment a case runs in: no kubeconfig, archive or debug switch from outside."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED_ENV}
    env["PYTHONPATH"] = str(SRC)
    env["COLUMNS"] = "200"
    env["HOME"] = str(home) if home is not None else tempfile.gettempdir()
    return env


def run_cli(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    memory: int | None = None,
) -> Outcome:
    """``kubemedic ARGV`` in its own process group, killed (with its children) at ``timeout``;
    ``memory`` caps its address space in bytes (so a runaway input cannot take the machine)."""
    started = time.monotonic()
    limit = None if memory is None else functools.partial(_cap_memory, memory)
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, *argv],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env) if env is not None else environment(),
        cwd=cwd,
        start_new_session=True,
        preexec_fn=limit,  # noqa: PLW1509 - only setrlimit, before exec
    )
    try:
        out, err = process.communicate(stdin, timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = None
    return Outcome(
        code,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        time.monotonic() - started,
        timeout,
    )


def _cap_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class _Overtime(BaseException):
    """Raised by the watchdog; a BaseException so that no ``except Exception`` swallows it."""


@contextlib.contextmanager
def _watchdog(seconds: float) -> Iterator[None]:
    def ring(_signum: int, _frame: FrameType | None) -> None:
        raise _Overtime

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _clean_environ() -> Iterator[None]:
    saved = {k: os.environ.pop(k) for k in _CLEARED_ENV if k in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def run_cli_inprocess(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT) -> Outcome:
    """``kubemedic.cli.main(argv)`` in this process, stopped by SIGALRM at ``timeout`` (main
    thread only; for inputs that cannot block in a system call or exhaust memory)."""
    from kubemedic.cli import _common, main

    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    started = time.monotonic()
    with (
        _clean_environ(),
        mock.patch.object(_common, "leaving_at_once", lambda: False),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            with _watchdog(timeout):
                main(list(argv))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0 if done.code is None else 2
        except _Overtime:
            code = None
        except BaseException as escaped:
            err.write(f"Traceback: escaped main(): {type(escaped).__name__}: {escaped}\n")
            code = 3
        finally:
            _common._State.leave_at_once = False
    return Outcome(code, out.getvalue(), err.getvalue(), time.monotonic() - started, timeout)


@functools.cache
def startup_seconds() -> float:
    """What one ``run_cli`` costs before the command does anything (``--version``)."""
    return min(run_cli(["--version"]).seconds for _ in range(3))


def violations(outcome: Outcome, *, valid: bool | None, names: str | None) -> list[str]:
    """Each way ``outcome`` breaks the contract, as ``class: detail`` (empty when it keeps it)."""
    found: list[str] = []
    if outcome.timed_out:
        return [f"hang: still running after {outcome.timeout:.0f} s"]
    code = outcome.code
    if code == 3:
        found.append(f"exit 3 (bug): {outcome.first_err_line()}")
    if "Traceback" in outcome.err:
        found.append("traceback: on stderr")
    if code is not None and code < 0:
        found.append(f"crash: killed by signal {-code}")
    elif code not in (0, 1, 2, 3):
        found.append(f"other exit: {code}: {outcome.first_err_line()}")
    if valid is False and code in (0, 1):
        found.append(f"accepted: invalid input exited {code}")
    if valid is True and code == 2:
        found.append(f"rejected: valid input exited 2: {outcome.first_err_line()}")
    if code == 2:
        found.extend(_message_problems(outcome.err, names if valid is False else None))
    return found


def _message_problems(err: str, names: str | None) -> list[str]:
    lines = err.strip().splitlines()
    if len(lines) != 1:
        first = lines[0][:120] if lines else ""
        return [f"unclear: {len(lines)} lines on stderr, not one: {first}"]
    line = lines[0]
    problems = []
    if not line.startswith("error: "):
        problems.append(f"unclear: does not start 'error: ': {line[:160]}")
    wording = [w for w in PYTHON_WORDING if w in line]
    if wording:
        problems.append(f"unclear: Python wording {wording}: {line[:160]}")
    if names is not None and names not in line:
        problems.append(f"unclear: does not name {names!r}: {line[:160]}")
    return problems


def assert_contract(
    outcome: Outcome, *, valid: bool | None, names: str | None, what: str = ""
) -> None:
    """Never exit 3, never a traceback, never over the bound; invalid input exits 2 with one
    ``error:`` line naming ``names`` in the user's words; valid input exits 0 or 1; input of
    unknown validity exits 0, 1 or 2 (and 2 with one plain line)."""
    problems = violations(outcome, valid=valid, names=names)
    assert not problems, (
        f"{what}\n  exit {outcome.code} in {outcome.seconds:.1f} s\n  "
        + "\n  ".join(problems)
        + f"\n  stderr: {outcome.err[-1500:]}"
    )


def materialise(case: Case, directory: Path) -> list[str]:
    """Write the case's files under ``directory`` and give its argv with ``{d}`` filled in."""
    for name, content in case.files:
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return [arg.replace("{d}", str(directory)) for arg in case.argv]


def run_case(case: Case, directory: Path) -> Outcome:
    argv = materialise(case, directory)
    if case.inprocess:
        return run_cli_inprocess(argv, timeout=case.timeout)
    env = {**environment(directory), **case.extra}
    return run_cli(argv, timeout=case.timeout, env=env, cwd=directory, memory=case.memory)


def check_case(case: Case) -> None:
    """Run ``case`` in a fresh directory and assert the contract."""
    with tempfile.TemporaryDirectory(prefix="kmfuzz-") as name:
        outcome = run_case(case, Path(name))
    assert_contract(outcome, valid=case.valid, names=case.names, what=f"{case.path}: {case.label}")


def budget(examples: int) -> Callable[[T], T]:
    """Hypothesis settings for a fuzz test: ``examples`` cases (``KUBEMEDIC_FUZZ_EXAMPLES``
    overrides it for a long run), no deadline, derandomised so CI is reproducible, no shrinking
    (each example is a whole process; the failing input is printed as it was drawn)."""
    override = os.environ.get("KUBEMEDIC_FUZZ_EXAMPLES")
    return settings(
        max_examples=int(override) if override else examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
