"""A fake terminal for the commands' stderr, to see the progress they draw there."""

import re
from io import StringIO

import pytest
from rich.console import Console

from kubemedic.cli import _common


def fake_terminal(monkeypatch: pytest.MonkeyPatch) -> StringIO:
    """Make the commands' stderr a terminal writing into the returned buffer."""
    buffer = StringIO()
    terminal = Console(file=buffer, force_terminal=True, width=200)
    monkeypatch.setattr(_common, "err_console", lambda: terminal)
    return buffer


def shown(buffer: StringIO) -> str:
    """What the terminal showed, control sequences left out."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())
