"""Running ``kubemedic ARGS`` in the test's own process, through ``kubemedic.cli.main``, and
reading the one error line the exit-status contract promises (docs/errors.md)."""

from __future__ import annotations

import pytest

from kubemedic.cli import main


def kubemedic(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``kubemedic ARGS`` in this process: exit status, stdout, stderr."""
    with pytest.raises(SystemExit) as ended:
        main(list(args))
    captured = capsys.readouterr()
    code = ended.value.code
    return (code if isinstance(code, int) else 1), captured.out, captured.err


def one_error_line(err: str) -> str:
    """The single ``error: ...`` line of ``err``; fails on more lines, a traceback or a bug."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]
