"""Progress: drawn on a terminal, nothing at all anywhere else."""

import re
from io import StringIO

from rich.console import Console

from kubemedic.output import progress


def terminal() -> tuple[Console, StringIO]:
    buffer = StringIO()
    return Console(file=buffer, force_terminal=True, width=120), buffer


def shown(buffer: StringIO) -> str:
    """What the terminal showed, control sequences left out."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())


def test_nothing_is_drawn_when_the_console_is_not_a_terminal() -> None:
    buffer = StringIO()
    chosen = progress.on_terminal(Console(file=buffer, width=120))
    assert chosen is progress.NO_PROGRESS
    assert not chosen.active
    with chosen.task("reading") as task:
        task.phase("checking")
        task.update("more")
    with chosen.bar("scenario", total=10) as bar:
        bar.update(5, "half way")
    assert buffer.getvalue() == ""


def test_every_phase_of_a_task_is_drawn_and_updates_show_at_the_next_refresh() -> None:
    console, buffer = terminal()
    chosen = progress.on_terminal(console)
    assert chosen.active
    with chosen.task("reading [pods].json") as task:  # never read as markup
        task.phase("building the view")
        task.phase("checking: evicted")
        task.update("checking: evicted, more")
    text = shown(buffer)
    for phase in ("reading [pods].json", "building the view", "checking: evicted"):
        assert phase in text


def test_a_bar_shows_its_description_and_its_last_text_when_it_ends() -> None:
    console, buffer = terminal()
    with progress.on_terminal(console).bar("storm", total=600) as bar:
        bar.update(300, "T+00:05:00 / 00:10:00")
        bar.update(600, "T+00:10:00 / 00:10:00  120x real time")
    text = shown(buffer)
    assert "storm" in text
    assert "T+00:10:00 / 00:10:00  120x real time" in text
