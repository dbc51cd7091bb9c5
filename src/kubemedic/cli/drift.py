"""``kubemedic drift``: the live cluster compared with Git, both ways (docs/drift.md).

With ``--git`` (a local checkout or a URL, ``--path``, ``--revision``) the desired state is read
from there; without it, from the sources the cluster's Argo CD Applications and Flux
Kustomizations name. Each drifted field is shown with its path, the value live and in Git, who
wrote it and when (managedFields), and ``-o json`` carries the JSON patch that reverts each
object. Exit codes as ``scan``: 0 no drift, 1 drift found, 2 a source, the cluster or the
configuration could not be used.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli._common import ContextOption, KubeconfigOption, _fail, out_console, plain_table

if TYPE_CHECKING:
    from rich.console import Console

    from kubemedic.drift.checking import DriftReport
    from kubemedic.drift.engine import ObjectDrift
    from kubemedic.drift.rules import DriftRules
    from kubemedic.drift.sources import DesiredObject, Source

    Drifted = list[tuple[ObjectDrift, DesiredObject]]

__all__ = ["register"]


class DriftOutput(enum.StrEnum):
    table = "table"
    json = "json"
    diff = "diff"


def drift(
    *,
    git: Annotated[
        str | None,
        typer.Option(
            "--git",
            help="Repository: a local checkout or a URL (default: the sources of the cluster's "
            "Argo CD Applications and Flux Kustomizations).",
        ),
    ] = None,
    path: Annotated[str, typer.Option(help="Directory in the repository.")] = "",
    revision: Annotated[
        str | None, typer.Option(help="Branch, tag or commit (default: HEAD).")
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace", "-n", help="Namespace of manifests that name none (default: default)."
        ),
    ] = None,
    output: Annotated[
        DriftOutput, typer.Option("--output", "-o", help="table, json or diff.")
    ] = DriftOutput.table,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML file with a drift: section (ignore rules)."),
    ] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
) -> None:
    """Compare the live cluster with Git both ways: values changed live, fields removed live,
    and fields added live by a person; who and when; the patch that reverts it."""
    import asyncio  # noqa: PLC0415 - loaded when it runs

    from kubemedic import config as configuration  # noqa: PLC0415
    from kubemedic.drift import settings as drift_settings  # noqa: PLC0415
    from kubemedic.drift import sources  # noqa: PLC0415
    from kubemedic.errors import KubemedicError  # noqa: PLC0415

    rules = None
    if config is not None:
        try:
            rules = drift_settings.load(configuration.load_settings(config))
        except configuration.ConfigError as error:
            raise _fail(f"--config {error}") from None
    wanted = (
        sources.Source(repository=git, path=path, revision=revision, namespace=namespace)
        if git is not None
        else None
    )
    try:
        report, notes = asyncio.run(_run(wanted, rules, kubeconfig, context, namespace))
    except KubemedicError as error:
        raise _fail(str(error)) from None
    raise typer.Exit(_show(report, notes, output))


async def _run(
    wanted: Source | None,
    rules: DriftRules | None,
    kubeconfig: Path | None,
    context: str | None,
    namespace: str | None,
) -> tuple[DriftReport, list[str]]:
    import asyncio  # noqa: PLC0415
    from dataclasses import replace  # noqa: PLC0415

    from kubemedic.drift import checking, sources  # noqa: PLC0415
    from kubemedic.kube import config as kubeconfig_  # noqa: PLC0415
    from kubemedic.kube.discovery import discover  # noqa: PLC0415

    resolved = kubeconfig_.resolve(kubeconfig, context)
    api = kubeconfig_.connect(resolved)
    notes: list[str] = []
    try:
        await kubeconfig_.probe(api, resolved)
        found = await discover(api)
        if wanted is not None:
            targets = [wanted]
        else:
            managed = await checking.discover_sources(api, discovery=found)
            if not managed:
                raise kubeconfig_.KubeAccessError(
                    "no --git given and the cluster has no Argo CD Application or Flux "
                    "Kustomization to take the sources from"
                )
            targets = []
            for owner in managed:
                notes.extend(f"{owner}: {note}" for note in owner.notes)
                if not owner.in_cluster:
                    notes.append(f"{owner}: applies to {owner.destination}, not this cluster")
                    continue
                targets.extend(
                    replace(s, namespace=s.namespace or namespace) if namespace else s
                    for s in owner.sources
                )
        sets = [await asyncio.to_thread(sources.load, target) for target in targets]
        for desired in sets:
            notes.extend(f"{desired.source}: skipped {s}" for s in desired.skipped)
        report = await checking.check(api, sets, rules, discovery=found)
        return report, notes
    finally:
        await api.close()


def _show(report: DriftReport, notes: list[str], output: DriftOutput) -> int:
    import json  # noqa: PLC0415

    from kubemedic.drift import drift_to_json  # noqa: PLC0415

    console = out_console()
    drifted = report.drifted
    if output is DriftOutput.json:
        body = {
            "drift": [{**drift_to_json(d), "origin": str(o.origin)} for d, o in drifted],
            "compared": len(report.drifts),
            "unserved": [str(o.ref) for o in report.unserved],
            "notCompared": [{"object": str(o.ref), "why": why} for o, why in report.not_compared],
            "notes": notes,
        }
        typer.echo(json.dumps(body, indent=2, default=str))
        return 1 if drifted else 0
    for note in notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    for item in report.unserved:
        console.print(
            f"note: {item.ref} ({item.origin}): the API server does not serve {item.kind}",
            markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
    for item, why in report.not_compared:
        console.print(f"note: {item.ref}: not compared: {why}", markup=False, highlight=False)
    if output is DriftOutput.diff:
        _diff(console, drifted)
    else:
        _table(console, drifted)
    console.print(
        f"{len(drifted)} of {len(report.drifts)} objects drifted", markup=False, highlight=False
    )
    return 1 if drifted else 0


def _table(console: Console, drifted: Drifted) -> None:
    table = plain_table(("OBJECT", "FIELD", "DRIFT", "LIVE", "GIT", "WHO", "WHEN"), "")
    for result, _ in drifted:
        name = f"{result.kind}/{result.namespace + '/' if result.namespace else ''}{result.name}"
        if result.missing:
            table.add_row(name, "", "missing", "", "(the object)", "", "")
        for field in result.drifts:
            owner = field.owner
            table.add_row(
                name,
                str(field.path),
                field.kind,
                _short(field.live),
                _short(field.desired),
                owner.manager if owner else "",
                (owner.time or "") if owner else "",
            )
    console.print(table)


def _diff(console: Console, drifted: Drifted) -> None:
    import json  # noqa: PLC0415

    for result, origin in drifted:
        console.print(
            f"--- git {origin.origin}\n+++ live {result.kind} "
            f"{result.namespace + '/' if result.namespace else ''}{result.name}",
            markup=False, highlight=False,
        )  # fmt: skip
        for field in result.drifts:
            who = f"  # {field.owner.manager} {field.owner.time or ''}" if field.owner else ""
            if field.kind != "live-only":
                console.print(f"-{field.path}: {_short(field.desired)}", markup=False)
            if field.kind != "removed":
                console.print(f"+{field.path}: {_short(field.live)}{who}", markup=False)
        console.print(f"revert: {json.dumps(result.patch)}", markup=False, highlight=False)


def _short(value: object) -> str:
    import json  # noqa: PLC0415

    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def register(app: typer.Typer) -> None:
    """Add ``drift`` to ``app``."""
    app.command(name="drift")(drift)
