"""What the agent remembers across its own restarts and the node's reboots, on the node's disk.

One small JSON file (``agent.stateFile``, on a hostPath so it outlives the Pod):

- ``answered``: the ids of the requests answered, carried out or refused (the last
  :data:`KEEP_IDS`), so a request is carried out at most once even when the agent restarts
  between reading and acknowledging it, and an id refused once stays refused;
- ``actions``: when the agent carried out a request (the rate limit's history);
- ``daemons``: per daemon, its restarts and whether the agent gave up, with the boot they belong
  to (a new boot starts the count over).

It is written atomically (a temporary file beside it, fsync, rename), so a crash or a reboot
mid-write leaves the old file. A file that cannot be read (damaged, from an unknown version) is
set aside as ``<file>.damaged`` and the agent starts from nothing: the Node's own
``kubemedic.io/agent-ack`` still says which request was answered last, and the agent treats it
as answered too.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubemedic.agent.policy import DaemonState
from kubemedic.model.objects import format_time, parse_time

__all__ = ["KEEP_IDS", "Memory", "load", "save"]

KEEP_IDS = 256
VERSION = 1
MAX_BYTES = 1 << 20


@dataclass
class Memory:
    answered: list[str] = field(default_factory=list)
    actions: list[datetime] = field(default_factory=list)
    daemons: dict[str, DaemonState] = field(default_factory=dict)
    #: Why the file on disk was not used ("" when it was, or when there was none).
    problem: str = ""

    def answer(self, request_id: str, now: datetime) -> None:
        """Remember ``request_id`` as answered and ``now`` as an action carried out."""
        self.refuse(request_id)
        self.actions.append(now)
        del self.actions[:-KEEP_IDS]

    def refuse(self, request_id: str) -> None:
        """Remember ``request_id`` as answered without an action: a refused id stays refused."""
        if request_id and request_id not in self.answered:
            self.answered.append(request_id)
        del self.answered[:-KEEP_IDS]


def load(path: Path) -> Memory:
    """The memory in ``path``; an empty one when there is none or it cannot be used."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return _damaged(path, f"larger than {MAX_BYTES} bytes")
        body = json.loads(path.read_bytes())
    except FileNotFoundError:
        return Memory()
    except OSError as error:
        return Memory(problem=f"{path}: cannot read: {error.strerror or error}")
    except (ValueError, RecursionError):
        return _damaged(path, "not JSON")
    try:
        return _decode(body)
    except (KeyError, TypeError, ValueError) as error:
        return _damaged(path, f"unexpected content ({error})")


def _damaged(path: Path, why: str) -> Memory:
    with contextlib.suppress(OSError):
        path.replace(path.with_name(path.name + ".damaged"))
    return Memory(problem=f"{path}: {why}; set aside as {path.name}.damaged, starting afresh")


def _decode(body: Any) -> Memory:
    if not isinstance(body, dict) or body.get("version") != VERSION:
        raise ValueError("not a version 1 agent state")
    answered = [str(i) for i in body["answered"]]
    actions = [_time(t) for t in body["actions"]]
    daemons = {}
    for name, item in dict(body["daemons"]).items():
        daemons[str(name)] = DaemonState(
            restarts=tuple(_time(t) for t in item["restarts"]),
            gave_up=bool(item["gaveUp"]),
            boot_id=str(item["bootId"]),
        )
    return Memory(answered=answered, actions=actions, daemons=daemons)


def _time(value: Any) -> datetime:
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"not a time: {str(value)[:40]!r}")
    return parsed


def save(path: Path, memory: Memory) -> None:
    """Write ``memory`` to ``path`` atomically (``OSError`` when the disk refuses)."""
    body = {
        "version": VERSION,
        "answered": memory.answered,
        "actions": [format_time(t) for t in memory.actions],
        "daemons": {
            name: {
                "restarts": [format_time(t) for t in state.restarts],
                "gaveUp": state.gave_up,
                "bootId": state.boot_id,
            }
            for name, state in memory.daemons.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as out:
        out.write(json.dumps(body, indent=1).encode())
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)
