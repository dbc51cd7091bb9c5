"""``kubemedic nodes`` and ``kubemedic nodes release NODE``: node repair as a person sees it.

``kubemedic nodes`` reads the archive ``kubemedic run`` keeps (never the cluster): each node's
repair state (``healthy``, ``unhealthy``, ``repairing``, ``held``, ``quarantined``) as of the
controller's last round, its ladder step, why, and its ledger (the finished repairs and the one in
flight, one line per step action, oldest first).

``kubemedic nodes release NODE`` clears a quarantine, the one thing node repair never does on
its own: it removes the label ``kubemedic.io/quarantined`` and the annotation
``kubemedic.io/quarantine-reason`` from the Node, uncordons it when the quarantine cordoned it
(the annotation is there), writes an Event ``KubemedicRepairReleased`` on it, and records the
release in the ledger so the node's ledger window starts over (the repairs before it no longer
count towards the quarantine rule). The archive is opened before the cluster is touched, so a
bad ``--db`` changes nothing; the time recorded is the API server's (the simulator's virtual
clock when it runs one).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from kubemedic.cli import archive as archive_cli
from kubemedic.cli._common import (
    ContextOption,
    KubeconfigOption,
    OutputFormat,
    _fail,
    out_console,
    plain_table,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kubemedic.kube.api import Api
    from kubemedic.kube.config import Resolved
    from kubemedic.repair.policy.records import LedgerEntry, Repair
    from kubemedic.store.db import Archive

__all__ = ["register"]

QUARANTINED: Final = "kubemedic.io/quarantined"
QUARANTINE_REASON: Final = "kubemedic.io/quarantine-reason"
FIELD_MANAGER: Final = "kubemedic-repair"
COMPONENT: Final = "kubemedic-repair"
RELEASED_REASON: Final = "KubemedicRepairReleased"

_STYLES: Final = {
    "healthy": "green",
    "unhealthy": "yellow",
    "repairing": "cyan",
    "held": "yellow",
    "quarantined": "bold red",
}

nodes_app = typer.Typer(
    name="nodes",
    help="Node repair: each node's state, ladder step and ledger; release a quarantine.",
    no_args_is_help=False,
)


# -- kubemedic nodes --------------------------------------------------------------------------


@dataclass(slots=True)
class NodeView:
    """One node as ``kubemedic nodes`` shows it."""

    name: str
    state: str
    step: str = ""
    reason: str = ""
    finished: list[LedgerEntry] = field(default_factory=list)
    in_flight: Repair | None = None


def _time(when: datetime | None) -> str | None:
    from kubemedic.model import objects  # noqa: PLC0415

    return None if when is None else objects.format_exact_time(when)


def repair_items(view: NodeView) -> list[dict[str, Any]]:
    """One item per step action of each finished repair, then of the repair in flight (a
    repair without steps is one item with ``action`` null), oldest first."""
    items: list[dict[str, Any]] = []
    repairs: list[tuple[str, Any, datetime, datetime | None, str]] = [
        (entry.trigger, entry.steps, entry.started, entry.finished, entry.outcome)
        for entry in view.finished
    ]
    if view.in_flight is not None:
        flight = view.in_flight
        repairs.append((flight.trigger, flight.steps, flight.started, None, ""))
    for trigger, steps, started, finished, outcome in repairs:
        if not steps:
            items.append(
                {
                    "trigger": trigger,
                    "action": None,
                    "started": _time(started),
                    "finished": _time(finished),
                    "outcome": outcome or None,
                }
            )
        for step in steps:
            items.append(
                {
                    "trigger": trigger,
                    "action": step.action,
                    "started": _time(step.started),
                    "finished": _time(step.finished),
                    "outcome": step.outcome or None,
                }
            )
    return items


def node_json(view: NodeView) -> dict[str, Any]:
    """One node as the JSON output shows it."""
    return {
        "name": view.name,
        "state": view.state,
        "step": view.step or None,
        "reason": view.reason or None,
        "repairs": repair_items(view),
    }


def _choose_cluster(archive: Archive, cluster: str | None) -> str | None:
    """``--cluster``, else the one cluster node repair recorded (None when it recorded none);
    several clusters without ``--cluster`` is an error naming them."""
    from kubemedic.store import repairs  # noqa: PLC0415

    if cluster is not None:
        return cluster
    with archive.transaction(write=False) as connection:
        known = repairs.clusters(connection)
    if len(known) > 1:
        shown = ", ".join(known[:20])
        raise _fail(
            f"the archive {archive.url} holds several clusters ({shown}): choose one with --cluster"
        )
    return known[0] if known else None


def read_nodes(archive: Archive, cluster: str) -> list[NodeView]:
    """Every node node repair recorded for ``cluster``, by name. A stored record the codec
    cannot read ends the command naming the archive, table and repair."""
    from kubemedic.repair.policy import codec  # noqa: PLC0415

    states = {state["node"]: state for state in archive.node_states(cluster)}
    try:
        flight = {
            node: codec.repair_from_json(body, where=f"table repairs, node {node}: repair")
            for node, body in archive.load_repairs(cluster).items()
        }
        ledger = [
            codec.entry_from_json(entry, where=f"table repair_ledger, repair {entry['id']}")
            for entry in archive.ledger(cluster)
        ]
    except codec.CodecError as error:
        raise _fail(f"the archive {archive.url} is damaged: {error}") from None
    views: dict[str, NodeView] = {}
    for name in sorted({*states, *flight, *(entry.node for entry in ledger)}):
        state = states.get(name)
        repair = flight.get(name)
        if state is not None:
            view = NodeView(name, state["state"], state["step"], state["reason"])
        elif repair is not None:
            view = NodeView(name, "repairing", repair.step.value, repair.trigger)
        else:
            view = NodeView(name, "healthy")
        view.in_flight = repair
        views[name] = view
    for entry in sorted(ledger, key=lambda item: (item.started, item.finished)):
        views[entry.node].finished.append(entry)
    return list(views.values())


def _nodes_table(views: Sequence[NodeView], *, cluster: str, console: Console) -> None:
    counts: dict[str, int] = {}
    for view in views:
        counts[view.state] = counts.get(view.state, 0) + 1
    summary = ", ".join(f"{count} {state}" for state, count in sorted(counts.items()))
    table = plain_table(
        ["NAME", "STATE", "STEP", "REPAIRS", "LAST OUTCOME", "REASON"],
        f"{len(views)} node(s) of cluster {cluster}: {summary}",
    )
    for view in views:
        counted = _since_release(view.finished)
        last = view.finished[-1].outcome if view.finished else ""
        table.add_row(
            archive_cli._cell(view.name),
            archive_cli._cell(view.state, _STYLES.get(view.state, "")),
            archive_cli._cell(view.step or "<none>"),
            archive_cli._cell(str(len(counted) + (view.in_flight is not None))),
            archive_cli._cell(last or "<none>"),
            archive_cli._cell(view.reason),
        )
    console.print(table)
    lines = [(view.name, item) for view in views for item in repair_items(view)]
    if not lines:
        return
    ledger = plain_table(
        ["NODE", "TRIGGER", "ACTION", "STARTED", "FINISHED", "OUTCOME"],
        f"{len(lines)} repair step(s), oldest first per node",
    )
    for name, item in lines:
        ledger.add_row(
            archive_cli._cell(name),
            archive_cli._cell(item["trigger"]),
            archive_cli._cell(item["action"] or "<none>"),
            archive_cli._cell(item["started"] or ""),
            archive_cli._cell(item["finished"] or "<in flight>"),
            archive_cli._cell(item["outcome"] or ""),
        )
    console.print()
    console.print(ledger)


def _since_release(entries: Sequence[LedgerEntry]) -> list[LedgerEntry]:
    """The repairs after the latest release: those the quarantine rule counts."""
    from kubemedic.store.repairs import RELEASED  # noqa: PLC0415

    kept: list[LedgerEntry] = []
    for entry in entries:
        kept = [] if entry.outcome == RELEASED else [*kept, entry]
    return kept


@nodes_app.callback(invoke_without_command=True)
def nodes(
    ctx: typer.Context,
    *,
    db: archive_cli.DbOption = None,
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", help="This cluster (default: the one the archive holds)."),
    ] = None,
    output: archive_cli.OutputOption = OutputFormat.table,
) -> None:
    """Each node's repair state, ladder step, why, and its ledger, from the archive."""
    if ctx.invoked_subcommand is not None:
        return
    with archive_cli._open(db) as archive:
        chosen = _choose_cluster(archive, cluster)
        views = read_nodes(archive, chosen) if chosen is not None else []
        unknown = archive_cli._unknown_cluster(archive, cluster) if not views else ""
    if output is OutputFormat.json:
        archive_cli._write_json([node_json(view) for view in views])
    elif not views:
        out_console().print(f"no nodes recorded by node repair{unknown}", highlight=False)
    else:
        _nodes_table(views, cluster=chosen or "", console=out_console())


# -- kubemedic nodes release NODE -------------------------------------------------------------


@nodes_app.command("release")
def release(
    node: Annotated[str, typer.Argument(help="The quarantined node to release.")],
    *,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    db: archive_cli.DbOption = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster", help="The cluster's name in the archive (default: the context's)."
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", help="Who releases it, for the ledger and the Event (default: $USER)."
        ),
    ] = None,
) -> None:
    """Clear a node's quarantine: unlabel, uncordon, record it so its ledger starts over."""
    import asyncio  # noqa: PLC0415

    from kubemedic.kube import config as kube_config  # noqa: PLC0415

    name = node.strip()
    if not name:
        raise _fail("NODE: expected a node name")
    who = (by if by is not None else _user()).strip()
    if not who:
        raise _fail("--by '': expected who releases the node")
    try:
        resolved = kube_config.resolve(kubeconfig, context)
    except kube_config.KubeAccessError as error:
        raise _fail(str(error)) from None
    with archive_cli._open(db) as archive:
        try:
            released = asyncio.run(_release(resolved, name, by=who))
        except kube_config.KubeAccessError as error:
            raise _fail(str(error)) from None
        archive.release(cluster or resolved.cluster, name, by=who, at=released.timestamp())
    out_console().print(
        f"node/{name} released by {who}: quarantine cleared, ledger window started over",
        highlight=False,
    )


def _user() -> str:
    import getpass  # noqa: PLC0415

    try:
        return str(getpass.getuser())
    except (OSError, KeyError):
        return "unknown"


async def _release(resolved: Resolved, node: str, *, by: str) -> datetime:
    """Unlabel, unannotate and (when the quarantine cordoned it) uncordon ``node``, then write
    the Event; returns the API server's time of the release."""
    from kubemedic.kube import config as kube_config  # noqa: PLC0415
    from kubemedic.kube.api import ApiError, ConnectionLost, NotFound  # noqa: PLC0415

    api = kube_config.connect(resolved)
    where = f"context {resolved.context!r} ({resolved.server})"
    try:
        await kube_config.probe(api, resolved)
        try:
            body = await api.get(f"/api/v1/nodes/{node}")
            at = await _server_now(api)
            await release_node(api, node, body=body, by=by, at=at)
        except NotFound:
            raise _fail(f"node {node!r} not found in {where}") from None
        except ConnectionLost as error:
            raise _fail(f"cannot reach the API server of {where}: {error}") from None
        except ApiError as error:
            raise _fail(f"releasing node {node!r} in {where}: {error}") from None
        return at
    finally:
        await api.close()


async def _server_now(api: Api) -> datetime:
    from kubemedic.kube.clock import ClockError, ServerClock  # noqa: PLC0415

    try:
        return (await ServerClock.follow(api)).now()
    except ClockError:
        return datetime.now(UTC)


async def release_node(
    api: Api, node: str, *, body: Mapping[str, Any], by: str, at: datetime
) -> None:
    """Clear ``node``'s quarantine on the API (``body`` is the Node as just read): a JSON merge
    patch by field manager ``kubemedic-repair`` removing the label and the reason annotation
    and, when the reason annotation was there (the quarantine cordoned it), uncordoning; the
    patch carries the read resourceVersion, so a Node changed meanwhile is a conflict, not an
    overwrite. Then an Event ``KubemedicRepairReleased`` on the Node. A node without the label
    ends the command (exit 2)."""
    from kubemedic.model import objects  # noqa: PLC0415

    labels = objects.get_map(body, "metadata", "labels")
    annotations = objects.get_map(body, "metadata", "annotations")
    if QUARANTINED not in labels:
        raise _fail(
            f"node {node!r} is not quarantined (it has no label {QUARANTINED}): nothing to release"
        )
    cordoned = QUARANTINE_REASON in annotations
    patch: dict[str, Any] = {
        "metadata": {
            "labels": {QUARANTINED: None},
            "annotations": {QUARANTINE_REASON: None},
            "resourceVersion": objects.get_str(body, "metadata", "resourceVersion"),
        }
    }
    if cordoned:
        patch["spec"] = {"unschedulable": None}
    await api.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        params={"fieldManager": FIELD_MANAGER},
        body=patch,
        content_type="application/merge-patch+json",
    )
    reason = annotations.get(QUARANTINE_REASON)
    message = f"Quarantine released by {by}" + ("; uncordoned" if cordoned else "")
    if isinstance(reason, str) and reason:
        message += f" (it was quarantined because: {reason})"
    stamp = objects.format_time(at)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{node}.{secrets.token_hex(8)}", "namespace": "default"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Node",
            "name": node,
            "uid": objects.get_str(body, "metadata", "uid") or "",
        },
        "reason": RELEASED_REASON,
        "message": message,
        "type": "Normal",
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": by,
    }
    await api.request("POST", "/api/v1/namespaces/default/events", body=event)


def register(app: typer.Typer) -> None:
    """Add ``nodes`` (and ``nodes release``) to ``app``."""
    app.add_typer(nodes_app)
