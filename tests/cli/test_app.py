"""The ``kubemedic`` app itself: its version, its help, its global ``--quiet``."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kubemedic import __version__
from kubemedic.cli import app

runner = CliRunner()


def command_paths(group: Any = None, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the app, as the words that invoke it (``("sim", "run")``)."""
    group = group if group is not None else typer.main.get_command(app)
    paths = []
    for name, command in group.commands.items():
        path = (*prefix, name)
        if hasattr(command, "commands"):
            paths.extend(command_paths(command, path))
        else:
            paths.append(path)
    return paths


def test_version_flag_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"kubemedic {__version__}"


@pytest.mark.parametrize("command", [[], ["scan"], ["demo"], ["checks"]])
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_the_app_has_the_commands_of_every_group() -> None:
    assert set(command_paths()) == {
        ("scan",),
        ("checks",),
        ("sim", "serve"),
        ("sim", "list"),
        ("sim", "run"),
        ("demo",),
        ("events",),
        ("oom",),
        ("run",),
        ("incidents", "list"),
        ("incidents", "show"),
        ("incidents", "export"),
    }


@pytest.mark.parametrize("flag", ["--quiet", "-q"])
@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_quiet_is_accepted_before_every_command(flag: str, path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [flag, *path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_quiet_is_documented_as_a_global_option() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "--quiet" in result.output and "-q" in result.output


def test_an_input_error_no_command_worded_exits_2_with_its_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kubemedic.cli as cli
    from kubemedic.errors import DurationError, KubemedicError

    def failing() -> None:
        raise DurationError('--window: expected a duration such as 2m or 1h30m, got "5x"')

    monkeypatch.setattr(cli, "app", failing)
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 2
    assert 'error: --window: expected a duration such as 2m or 1h30m, got "5x"' in (
        capsys.readouterr().err
    )

    def broken() -> None:
        raise KubemedicError("not the user's fault")

    monkeypatch.setattr(cli, "app", broken)
    with pytest.raises(KubemedicError):  # not an input error: not exit 2
        cli.main()
