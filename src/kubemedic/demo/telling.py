"""Narration: how the demo tells what happened, what kubemedic saw and did, where to look.

Everything the demo says goes to stdout through a :class:`Teller` (progress goes to stderr,
through ``kubemedic.output.progress``). Each act ends with the dashboard addresses that show
it (:meth:`Teller.look`) and contributes rows to the closing table (:class:`Row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

__all__ = ["WIDTH", "Row", "Teller", "clock", "moment"]


@dataclass(frozen=True)
class Row:
    """One line of the closing table."""

    incident: str
    saw: str
    did: str


def clock(seconds: float) -> str:
    """Scenario time as ``HH:MM:SS``."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def moment(text: str | float | None) -> str:
    """An RFC 3339 time or epoch seconds as ``HH:MM:SS`` UTC (the cluster's clock); ``?``."""
    if text is None or text == "":
        return "?"
    if isinstance(text, int | float):
        when = datetime.fromtimestamp(text, UTC)
    else:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when.astimezone(UTC).strftime("%H:%M:%S")


#: Columns the other commands' tables are laid out for (the demo's own text is not wrapped).
WIDTH = 160


class Teller:
    """Prints the story on ``console``; ``base`` is the dashboard's address."""

    def __init__(self, console: Console, base: str, *, db_shown: str) -> None:
        self.console = console
        self.base = base.rstrip("/")
        self.db_shown = db_shown

    def act(self, number: int, title: str) -> None:
        self.console.print()
        self.console.rule(f"[bold]Act {number}: {escape(title)}")
        self.console.file.flush()

    def heading(self, text: str) -> None:
        self.console.print()
        self.console.print(Text(text, style="bold"), soft_wrap=True)

    def said(self, text: str, *, style: str = "") -> None:
        self.console.print(Text(text, style=style), soft_wrap=True)

    def item(self, label: str, text: str) -> None:
        """``label: text``, indented under the last heading."""
        line = Text("  ")
        line.append(f"{label}: ", style="bold")
        line.append(text)
        self.console.print(line, soft_wrap=True)

    def command(self, args: Sequence[str]) -> None:
        """A command line as the user would type it."""
        self.console.print(Text(f"$ {' '.join(args)}", style="bold cyan"), soft_wrap=True)

    def raw(self, text: str, *, lines: int | None = None) -> None:
        """Another program's output as it printed it (``lines``: only the first ones)."""
        shown = text.splitlines()
        if lines is not None and len(shown) > lines:
            shown = [*shown[:lines], f"... {len(shown) - lines} more lines"]
        self.console.file.write("\n".join(shown) + "\n")
        self.console.file.flush()

    def url(self, path: str, cluster: str, **params: str) -> str:
        """The dashboard address of ``path`` for ``cluster`` (the archive holds several)."""
        query = urlencode({"cluster": cluster, **params})
        return f"{self.base}{quote(path)}?{query}"

    def look(self, links: Sequence[tuple[str, str]]) -> None:
        """Where to look on the dashboard: (what, address) pairs."""
        self.heading("Where to look on the dashboard")
        for what, address in links:
            line = Text("  ")
            line.append(address, style="underline")
            line.append(f"  {what}", style="dim")
            self.console.print(line, soft_wrap=True)

    def summary(self, rows: Sequence[Row]) -> None:
        table = Table(
            title="What happened, what kubemedic saw, what it did", show_lines=True, expand=True
        )
        table.title_justify = "left"
        table.add_column("Incident", ratio=3)
        table.add_column("What kubemedic saw", ratio=3)
        table.add_column("What it did (or held back)", ratio=4)
        for row in rows:
            table.add_row(row.incident, row.saw, row.did)
        self.console.print()
        # A terminal's width is the reader's; a file or pipe gets the other tables' width.
        shown = self.console
        if not shown.is_terminal:
            shown = Console(file=shown.file, width=WIDTH, color_system=None)
        shown.print(table)
