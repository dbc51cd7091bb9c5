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
        ("recommend",),
        ("run",),
        ("incidents", "list"),
        ("incidents", "show"),
        ("incidents", "export"),
        ("nodes", "release"),
        ("config", "show-defaults"),
        ("agent",),
        ("drift",),
        ("rollback", "render"),
        ("rollback", "verify"),
        ("rollback", "status"),
        ("guard", "serve"),
        ("guard", "render"),
        ("web",),
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

    def failing(**_: object) -> None:
        raise DurationError('--window: expected a duration such as 2m or 1h30m, got "5x"')

    monkeypatch.setattr(cli, "app", failing)
    with pytest.raises(SystemExit) as done:
        cli.main([])
    assert done.value.code == 2
    assert 'error: --window: expected a duration such as 2m or 1h30m, got "5x"' in (
        capsys.readouterr().err
    )

    def unusable(**_: object) -> None:
        raise KubemedicError("the API server answered 500 [internal] for /api/v1/pods")

    monkeypatch.setattr(cli, "app", unusable)
    with pytest.raises(SystemExit) as done:
        cli.main([])
    assert done.value.code == 2
    assert "error: the API server answered 500 [internal] for /api/v1/pods" in (
        capsys.readouterr().err
    )


def test_a_bug_exits_3_with_one_line_and_the_traceback_only_under_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kubemedic.cli as cli

    def broken(**_: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "app", broken)
    monkeypatch.delenv("KUBEMEDIC_DEBUG", raising=False)
    with pytest.raises(SystemExit) as done:
        cli.main([])
    assert done.value.code == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "bug in kubemedic" in err and "ZeroDivisionError: division by zero" in err
    assert "--debug" in err

    monkeypatch.setenv("KUBEMEDIC_DEBUG", "1")
    with pytest.raises(SystemExit) as done:
        cli.main([])
    assert done.value.code == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "ZeroDivisionError" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["scan", "--bogus"], "No such option: --bogus"),
        (["scan", "--fail-on", "sometimes"], "'--fail-on'"),
        (["sim", "run"], "Missing argument"),
    ],
)
def test_usage_errors_are_one_plain_line_with_exit_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import kubemedic.cli as cli

    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: kubemedic ") and words in err
    assert len(err.strip().splitlines()) == 1 and "╭" not in err


def test_the_debug_flag_prints_the_traceback_of_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import kubemedic.cli as cli
    from kubemedic.checks import registry

    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("from inside a command")

    monkeypatch.delenv("KUBEMEDIC_DEBUG", raising=False)
    monkeypatch.setattr(registry, "explain", broken)
    with pytest.raises(SystemExit) as done:
        cli.main(["--debug", "checks", "probe-restarts"])
    assert done.value.code == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["sim", "run", "healthy", "--speed", "12XB"], "'--speed': expected a number, got '12XB'"),
        (["sim", "run", "healthy", "--seed=1e-300"], "'--seed': expected a whole number, got"),
        (["scan", "--fail-on", "xx"], "'xx' is not one of 'critical'"),
    ],
)
def test_a_value_of_the_wrong_type_is_said_without_pydantic(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import kubemedic.cli as cli

    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert words in err
    assert "Input should be" not in err and "Value error" not in err
    assert err.count("'xx'") <= 1
