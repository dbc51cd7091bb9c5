"""What every act shares: the scratch directory, the one archive, the children, the teller, and
the two moves each act makes: start ``kubemedic run`` against a served scenario, and play the
scenario on its virtual clock while watching that every child is still alive.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kubemedic.demo.children import Child, Children, DemoError, command, until
from kubemedic.demo.telling import WIDTH, Teller, clock
from kubemedic.output.progress import Progress

if TYPE_CHECKING:
    from kubemedic.sim.scenarios import ScenarioRun

__all__ = ["Stage", "stopped"]

#: Seconds between two looks at the children while a scenario plays.
_WATCH = 0.5


@dataclass
class Stage:
    """One demo's surroundings."""

    scratch: Path
    db: Path
    children: Children
    teller: Teller
    progress: Progress

    @property
    def url(self) -> str:
        return f"sqlite:///{self.db}"

    async def recorder(
        self,
        *,
        act: int,
        cluster: str,
        kubeconfig: Path,
        config: str,
        marker: str,
        extra: Sequence[str] = (),
    ) -> Child:
        """``kubemedic run`` for ``cluster`` with ``config`` (YAML text), started and waited
        for until its log says ``marker`` (the controller the act is about is on)."""
        path = self.scratch / f"act{act}.yaml"
        path.write_text(config, encoding="utf-8")
        args = ["run", "--db", self.url, "--kubeconfig", str(kubeconfig), "--clock", "server"]
        args += ["--cluster", cluster, "--no-leader-elect", "--config", str(path)]
        args += ["--listen", "127.0.0.1:0", *extra]  # /metrics on any free port
        with self.progress.task(f"act {act}: starting kubemedic run --cluster {cluster}"):
            child = self.children.start(
                f"kubemedic run (act {act}, cluster {cluster})", args, log=f"act{act}-run.log"
            )
            await until(
                lambda: marker in child.logged(),
                what=f"kubemedic run logging {marker!r}",
                children=self.children,
                blame=child,
            )
        return child

    async def play(
        self, run: ScenarioRun, *, speed: float, label: str, to: datetime | None = None
    ) -> None:
        """Play ``run`` at ``speed`` x real time up to ``to`` (default its end), serving its
        API meanwhile; a child that dies stops the play with a ``DemoError``."""
        end = (to or run.end) - run.origin
        looked = [0.0]
        with self.progress.task(f"{label}: playing") as task:

            def on_step() -> None:
                now = time.monotonic()
                if now - looked[0] >= _WATCH:
                    looked[0] = now
                    self.children.check()
                    task.update(
                        f"{label}: {clock(run.elapsed().total_seconds())} of "
                        f"{clock(end.total_seconds())} cluster time at {speed:g}x"
                    )

            await run.run_paced(speed, on_step=on_step, until=to)
        self.children.check()

    async def kubemedic(self, *args: str, ok: Sequence[int] = (0,)) -> str:
        """``kubemedic ARGS`` (the archive's commands get ``--db``); its stdout."""
        _, out, _ = await command(
            [*args, "--db", self.url], width=max(self.teller.console.width, WIDTH), ok=ok
        )
        return out

    async def json(self, *args: str) -> Any:
        return orjson.loads(await self.kubemedic(*args, "--output", "json"))

    def shown(self, *args: str) -> list[str]:
        """A command line as the user would type it against the demo's archive."""
        return ["kubemedic", *args, "--db", self.teller.db_shown]


async def stopped(stage: Stage, child: Child) -> None:
    """Stop ``child`` (a ``kubemedic run``): it must exit 0 after SIGTERM."""
    status = await stage.children.stop(child)
    if status != 0:
        raise DemoError(
            f"{child.name} exited with status {status} when stopped; the last lines of "
            f"{child.log}:\n{child.tail()}"
        )
