"""``kubemedic rollback render|verify|status``: the filesystem rollback kit (docs/rollback.md).

* ``render --out DIR [--spec FILE]`` writes the overlay script, its systemd unit, a cloud-init
  snippet and the effective spec into ``DIR``; a spec kubemedic refuses ends it (exit 2) with the
  reason, before anything is written.
* ``verify [--spec FILE]`` proves the rendered script on this machine in a private mount
  namespace and prints each step: exit 0 when the overlaid write is gone after the "reboot" and
  the kept write persists, 1 when a step failed, 2 when it cannot run here (not root, no
  OverlayFS: the reason is printed).
* ``status [--mountinfo FILE] [-o json]`` lists the overlays with a tmpfs upper dir, the tmpfs
  use, and what a reboot would throw away.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli import archive as archive_cli
from kubemedic.cli._common import ForceOption, OutputFormat, _fail, out_console, plain_table

if TYPE_CHECKING:
    from kubemedic.rollback.spec import RollbackSpec
    from kubemedic.rollback.status import Status

__all__ = ["register"]

rollback_app = typer.Typer(
    name="rollback",
    help="Filesystem rollback: tmpfs overlays that make a reboot a clean slate.",
    no_args_is_help=True,
)

SpecOption = Annotated[
    Path | None,
    typer.Option(
        "--spec",
        help="The rollback spec (YAML or JSON; default: the built-in one, see docs/rollback.md).",
    ),
]


def _spec(path: Path | None) -> RollbackSpec:
    from kubemedic.rollback.spec import RollbackSpec, SpecError, load_spec  # noqa: PLC0415

    if path is None:
        return RollbackSpec()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise _fail(f"--spec {path}: cannot read it: {reason or error}") from None
    try:
        return load_spec(text, where=f"--spec {path}")
    except SpecError as error:
        raise _fail(str(error)) from None


@rollback_app.command("render")
def render(
    out: Annotated[Path, typer.Option("--out", help="The directory to write the files into.")],
    spec: SpecOption = None,
    force: ForceOption = False,
) -> None:
    """Write the overlay script, its systemd unit, a cloud-init snippet and the spec into DIR."""
    from kubemedic.output.files import OutputError  # noqa: PLC0415
    from kubemedic.rollback import render as rendering  # noqa: PLC0415

    chosen = _spec(spec)
    try:
        written = rendering.write(chosen, out, force=force)
    except OutputError as error:
        raise _fail(str(error)) from None
    for path in written:
        typer.echo(f"wrote {path}")


@rollback_app.command("verify")
def verify(
    spec: SpecOption = None,
    keep_tree: Annotated[
        bool, typer.Option("--keep-tree", help="Leave the work directory for a look afterwards.")
    ] = False,
) -> None:
    """Prove the rendered script here, as root, in a private mount namespace."""
    from kubemedic.rollback import verify as verifying  # noqa: PLC0415

    chosen = _spec(spec)
    try:
        held = verifying.verify(chosen, echo=_echo, keep_tree=keep_tree)
    except verifying.VerifyUnavailable as error:
        raise _fail(f"rollback verify cannot run here: {error}") from None
    if held:
        _echo("verified: the overlaid write is gone after the reboot and the kept write persists")
        return
    _echo("NOT verified: a step above failed")
    raise typer.Exit(1)


def _echo(line: str) -> None:
    typer.echo(line)


@rollback_app.command("status")
def status(
    mountinfo: Annotated[
        Path,
        typer.Option("--mountinfo", help="The mount table to read."),
    ] = Path("/proc/self/mountinfo"),
    output: archive_cli.OutputOption = OutputFormat.table,
    limit: Annotated[
        int,
        typer.Option("--limit", min=0, help="Changes listed per overlaid directory (table)."),
    ] = 50,
) -> None:
    """What is overlaid here, how much tmpfs it uses, and what a reboot would throw away."""
    from kubemedic.rollback.mountinfo import MountinfoError  # noqa: PLC0415
    from kubemedic.rollback.status import read_status  # noqa: PLC0415

    try:
        text = mountinfo.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise _fail(f"--mountinfo {mountinfo}: cannot read it: {reason or error}") from None
    try:
        found = read_status(text, where=f"--mountinfo {mountinfo}", limit=10**6)
    except MountinfoError as error:
        raise _fail(str(error)) from None
    if output is OutputFormat.json:
        archive_cli._write_json(found.as_json())
        return
    _status_table(found, limit=limit)


def _size(value: int | None) -> str:
    if value is None:
        return "?"
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{value} B"


def _status_table(found: Status, *, limit: int) -> None:
    console = out_console()
    if not found.overlays:
        console.print(
            "nothing overlaid: no OverlayFS mount with a tmpfs upper dir; a reboot keeps every "
            "change on the disk",
            highlight=False,
        )
        return
    table = plain_table(
        ["DIRECTORY", "CHANGES", "SIZE", "TMPFS", "KEPT INSIDE"],
        f"{len(found.overlays)} overlaid director(y/ies): a reboot throws their changes away",
    )
    for overlay in found.overlays:
        table.add_row(
            archive_cli._cell(overlay.mountpoint),
            archive_cli._cell(str(overlay.count) if overlay.error is None else "?"),
            archive_cli._cell(_size(overlay.bytes)),
            archive_cli._cell(overlay.tmpfs),
            archive_cli._cell(" ".join(overlay.kept) or "<none>"),
        )
    console.print(table)
    for tmpfs in found.tmpfs:
        share = ""
        if tmpfs.size_bytes and tmpfs.used_bytes is not None:
            share = f" ({100 * tmpfs.used_bytes / tmpfs.size_bytes:.1f}%)"
        console.print(
            f"tmpfs {tmpfs.mountpoint}: {_size(tmpfs.used_bytes)} used of "
            f"{_size(tmpfs.size_bytes)}{share} (RAM)",
            highlight=False,
        )
    changes = plain_table(["KIND", "PATH", "SIZE"], "what a reboot would throw away")
    shown = 0
    for overlay in found.overlays:
        if overlay.error is not None:
            console.print(f"{overlay.mountpoint}: {overlay.error}", highlight=False)
        for change in overlay.changes[:limit]:
            changes.add_row(
                archive_cli._cell(change.kind),
                archive_cli._cell(change.path),
                archive_cli._cell(_size(change.size) if change.kind != "deleted" else ""),
            )
            shown += 1
        if overlay.count > limit:
            changes.add_row(
                archive_cli._cell("..."),
                archive_cli._cell(
                    f"{overlay.count - limit} more under {overlay.mountpoint} (--limit, -o json)"
                ),
                archive_cli._cell(""),
            )
    console.print()
    if shown:
        console.print(changes)
    else:
        console.print("no changes since boot under the overlaid directories", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``rollback`` (render, verify, status) to ``app``."""
    app.add_typer(rollback_app)
