"""Progress of long work, drawn with Rich on a terminal's stderr, and nothing anywhere else.

``on_terminal(console)`` gives a ``Progress`` that draws on ``console`` when it is a terminal, and
``NO_PROGRESS`` (which does nothing, cheaply) when it is not: output piped to a file or another
program never carries progress. The command line also uses ``NO_PROGRESS`` for ``--quiet``.

Two shapes of progress:

* ``task(text)``: a spinner and a line of text, gone when the block ends. ``Task.update`` changes
  the text (drawn at the next refresh: call it as often as you like); ``Task.phase`` changes it
  and draws it at once (a new phase, each of which is seen).
* ``bar(description, total)``: a bar of ``completed`` against ``total`` with a line of text,
  left on the terminal when the block ends (the last state of a run).

The pure layers never see this module: they take a plain callback (``Callable[[str], None]``),
such as a task's ``update`` or ``phase``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID
    from rich.spinner import Spinner

__all__ = ["NO_PROGRESS", "Bar", "Progress", "Task", "on_terminal"]


class Task:
    """A line of progress text; this one shows nothing."""

    def update(self, text: str) -> None:
        """Show ``text`` from the next refresh on."""

    def phase(self, text: str) -> None:
        """Show ``text`` now."""


class Bar:
    """A progress bar; this one shows nothing."""

    def update(self, completed: float, text: str = "") -> None:
        """Move the bar to ``completed`` with ``text`` beside it."""


class Progress:
    """Progress that shows nothing (``NO_PROGRESS``); ``on_terminal`` gives one that draws."""

    #: Whether anything is drawn: callers may skip preparing text nobody sees.
    active = False

    @contextlib.contextmanager
    def task(self, text: str) -> Iterator[Task]:
        yield Task()

    @contextlib.contextmanager
    def bar(self, description: str, *, total: float) -> Iterator[Bar]:
        yield Bar()


NO_PROGRESS = Progress()


def on_terminal(console: Console) -> Progress:
    """Progress drawn on ``console`` if it is a terminal, else ``NO_PROGRESS``."""
    if not console.is_terminal or console.is_dumb_terminal:
        return NO_PROGRESS
    return _Drawn(console)


class _DrawnTask(Task):
    def __init__(self, live: Live, spinner: Spinner) -> None:
        self._live = live
        self._spinner = spinner

    def update(self, text: str) -> None:
        from rich.text import Text  # noqa: PLC0415 - loaded with the rest of Rich by then

        self._spinner.update(text=Text(text))

    def phase(self, text: str) -> None:
        self.update(text)
        self._live.refresh()


class _DrawnBar(Bar):
    def __init__(self, progress: RichProgress, task: TaskID) -> None:
        self._progress = progress
        self._task = task

    def update(self, completed: float, text: str = "") -> None:
        self._progress.update(self._task, completed=completed, text=text)


class _Drawn(Progress):
    active = True

    def __init__(self, console: Console) -> None:
        self._console = console

    @contextlib.contextmanager
    def task(self, text: str) -> Iterator[Task]:
        from rich.live import Live  # noqa: PLC0415 - only a terminal needs them
        from rich.spinner import Spinner  # noqa: PLC0415
        from rich.text import Text  # noqa: PLC0415

        spinner = Spinner("dots", text=Text(text), style="cyan")
        with Live(
            spinner,
            console=self._console,
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,  # what a command prints may be piped: never onto stderr
        ) as live:
            shown = _DrawnTask(live, spinner)
            live.refresh()
            yield shown

    @contextlib.contextmanager
    def bar(self, description: str, *, total: float) -> Iterator[Bar]:
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn  # noqa: PLC0415
        from rich.progress import Progress as RichProgress  # noqa: PLC0415
        from rich.text import Text  # noqa: PLC0415

        with RichProgress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[text]}", markup=False),
            TimeElapsedColumn(),
            console=self._console,
            transient=False,
            redirect_stdout=False,
        ) as progress:
            task = progress.add_task(Text(description).markup, total=total, text="")
            yield _DrawnBar(progress, task)
