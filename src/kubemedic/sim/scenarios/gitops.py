"""A scenario's GitOps applier: Argo CD syncing an Application from a real Git repository.

A scenario with a ``gitops`` block (:class:`~kubemedic.sim.scenarios.spec.GitOps`) gets, when
the story begins:

1. **The repository.** ``sim run --git-out DIR`` writes it at ``DIR`` (a new repository with a
   work tree, ``HEAD`` on the branch followed): the block's ``commits`` first, then each
   ``push`` of the timeline when it fires, each commit dated with the cluster's clock, so
   ``git log`` reads as the story. Without ``--git-out`` it is written in a temporary directory
   removed with the run. ``sim run --git DIR`` follows an existing repository instead and
   writes nothing to it (``commits`` and pushes are skipped).
2. **The Application** ``argoproj.io/v1alpha1`` (created as ``kubectl-client-side-apply``):
   ``spec.source`` names the repository (its absolute path on this machine when it is kept,
   else the block's ``repoURL``), ``path``, ``targetRevision`` (the branch) and
   ``directory.recurse``; ``spec.destination`` the in-cluster server and
   ``destinationNamespace``; ``syncPolicy.automated`` with ``selfHeal``.
3. **Syncs**, as Argo CD's application controller does them with ``ServerSideApply=true``: every
   object of the tree at the branch head below ``path`` (the commit's tree, not the work tree)
   is server-side applied as ``manager`` (``argocd-controller``) with force, in its own
   namespace or ``destinationNamespace`` (created when missing: ``CreateNamespace=true``), with
   the tracking annotation ``argocd.argoproj.io/tracking-id:
   <application>:<group>/<kind>:<namespace>/<name>``. The Application's ``status`` (written as
   ``argocd-application-controller``) then records the commit in ``sync.revision``,
   ``sync.status`` (``Synced``), ``resources``, ``operationState`` and ``history``.

When a sync happens: at once when the story begins; on a ``sync`` action; on a ``push`` with
``webhook: true`` (Argo CD's Git webhook); and at every ``syncInterval`` reconcile when the
branch head moved since the last sync (a commit made by anyone, e.g. ``git commit`` in the work
tree while ``sim run --serve`` runs), or, with ``selfHeal``, when the live objects drifted from
the synced commit. A reconcile that does not sync still refreshes ``sync.status`` and
``health``, with Argo CD's blind spot: an object is ``OutOfSync`` only when a field its
manifest sets differs live; fields that exist only live (a ``nodeName`` added by
``kubectl edit``) are not seen.

Failures (a branch with no commit, a malformed manifest, an object the API refuses) are
reported to the run (:attr:`ScenarioRun.failures`) and recorded in the Application's
``operationState`` (phase ``Failed``); the story goes on.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.scenarios.gitrepo import GitOpsError, GitRepository
from kubemedic.sim.scenarios.spec import GitOps, Push

__all__ = ["APPLICATION_API", "TRACKING_ANNOTATION", "Applier", "GitTarget"]

APPLICATION_API = "argoproj.io/v1alpha1"
TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"
IN_CLUSTER = "https://kubernetes.default.svc"
_CREATOR = "kubectl-client-side-apply"


@dataclass(frozen=True)
class GitTarget:
    """Where a run's GitOps repository is: written there (``--git-out``, ``write``) or
    followed as it is (``--git``)."""

    path: Path
    write: bool = True


class Applier:
    """The Application and its syncs for one run. ``apply(manifest, manager)`` and
    ``create(manifest, manager)`` write as the timeline does (namespaces created first);
    ``note(text)`` records a step; ``fail(text)`` a failure."""

    def __init__(
        self,
        spec: GitOps,
        *,
        sim: Simulation,
        target: GitTarget | None,
        apply: Callable[[Mapping[str, Any], str], None],
        create: Callable[[Mapping[str, Any], str], None],
        note: Callable[[str], None],
        fail: Callable[[str], None],
    ) -> None:
        self.spec = spec
        self.sim = sim
        self._apply, self._create, self._note, self._fail = apply, create, note, fail
        self._scratch: weakref.finalize[[str], Applier] | None = None
        if target is None:  # removed by close(), or when the run is collected
            scratch = tempfile.mkdtemp(prefix="kubemedic-gitops-")
            self._scratch = weakref.finalize(self, _remove, scratch)
            target = GitTarget(Path(scratch))
        self.write = target.write
        if target.write:
            self.repository = GitRepository.create(target.path, branch=spec.revision)
        else:
            self.repository = GitRepository.open(target.path, branch=spec.revision)
        kept = self._scratch is None
        default_url = f"https://git.example.com/{spec.application}.git"
        self.repo_url = str(self.repository.root) if kept else spec.repo_url or default_url
        self.synced: str | None = None
        self._desired: list[dict[str, Any]] = []
        self._status = Client(sim.server, managers.ARGOCD_APPLICATION_CONTROLLER)
        self._history = 0

    def close(self) -> None:
        """Remove a temporary repository (a kept one stays)."""
        if self._scratch is not None:
            self._scratch()

    # the story -------------------------------------------------------------------------------

    def start(self) -> None:
        """Write the initial commits, create the Application, sync it and arm the reconcile."""
        if self.write:
            for commit in self.spec.commits:
                self.repository.commit(
                    commit.files, message=commit.message, author=commit.author, when=self.sim.now()
                )
        self._create(self._application(), _CREATOR)
        self.sync(initiated="automated")
        if self.spec.sync_interval > 0:
            self.sim.after(self.spec.sync_interval, self._reconcile, name="gitops:reconcile")

    def push(self, action: Push) -> str:
        """A ``push`` action: the commit (unless the repository is only followed), then a sync
        with ``webhook``."""
        if not self.write:
            text = f"push {action.message!r} not written (--git: the repository is followed)"
        else:
            sha = self.repository.commit(
                action.files, message=action.message, author=action.author, when=self.sim.now()
            )
            text = f"push {sha[:7]} {action.message!r} to {self.spec.revision}"
        if self.spec.webhook:
            text += "; " + self.sync(initiated="webhook")
        return text

    def sync(self, *, initiated: str = "user") -> str:
        """Apply the tree at the branch head; what was done, in a sentence. Raises
        ``GitOpsError`` (a ``LookupError``) when there is nothing to sync."""
        spec = self.spec
        started = rfc3339(self.sim.now())
        head = self.repository.head()
        if head is None:
            raise GitOpsError(f"{self.repo_url}: {spec.revision} names no commit")
        try:
            found = self.repository.manifests(head, spec.path, recurse=spec.recurse)
        except GitOpsError as error:
            self._record(head, started, [], f"ComparisonError: {error}")
            raise
        desired = [self._placed(body) for _, body in found]
        refused: list[str] = []
        for body in desired:
            try:
                self._apply(body, spec.manager)
            except errors.StatusError as exc:
                refused.append(f"{_describe(body)}: {exc.message}")
        self.synced = head
        self._desired = desired
        self._record(head, started, desired, "; ".join(refused))
        if refused:
            raise GitOpsError(f"sync of {head[:7]} failed: {'; '.join(refused)}")
        return f"{spec.application} synced to {head[:7]} ({len(desired)} objects)"

    def _reconcile(self) -> None:
        self.sim.after(self.spec.sync_interval, self._reconcile, name="gitops:reconcile")
        try:
            head = self.repository.head()
            if head is not None and head != self.synced:
                self._note(self.sync(initiated="automated"))
                return
            if self.spec.self_heal and self._out_of_sync():
                self._note(self.sync(initiated="automated") + " (self-heal)")
                return
            self._refresh()
        except (GitOpsError, errors.StatusError) as exc:
            self._fail(f"gitops {self.spec.application}: {exc}")

    # objects -----------------------------------------------------------------------------------

    def _placed(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` as Argo CD applies it: its namespace, and the tracking annotation."""
        meta = dict(body.get("metadata") or {})
        res = self.sim.server.registry.for_kind(str(body.get("apiVersion")), str(body.get("kind")))
        namespaced = res.namespaced if res is not None else bool(meta.get("namespace"))
        if namespaced and not meta.get("namespace"):
            meta["namespace"] = self.spec.destination_namespace or "default"
        group = str(body.get("apiVersion") or "").rpartition("/")[0]
        where = f"{meta.get('namespace') or ''}/{meta.get('name')}"
        annotations = dict(meta.get("annotations") or {})
        annotations[TRACKING_ANNOTATION] = f"{self.spec.application}:{group}/{body['kind']}:{where}"
        meta["annotations"] = annotations
        return {**body, "metadata": meta}

    def _live(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        res = self.sim.server.registry.for_kind(str(body.get("apiVersion")), str(body.get("kind")))
        if res is None:
            return None
        meta = body.get("metadata") or {}
        entry = self.sim.server.store.get(
            res.store_key, (str(meta.get("namespace") or ""), str(meta.get("name")))
        )
        return entry.obj if entry is not None else None

    def _out_of_sync(self) -> bool:
        return any(not _contained(b, self._live(b)) for b in self._desired)

    # the Application -----------------------------------------------------------------------------

    def _source(self) -> dict[str, Any]:
        source: dict[str, Any] = {
            "repoURL": self.repo_url,
            "path": self.spec.path or ".",
            "targetRevision": self.spec.revision,
        }
        if self.spec.recurse:
            source["directory"] = {"recurse": True}
        return source

    def _destination(self) -> dict[str, Any]:
        destination = {"server": IN_CLUSTER}
        if self.spec.destination_namespace:
            destination["namespace"] = self.spec.destination_namespace
        return destination

    def _application(self) -> dict[str, Any]:
        return {
            "apiVersion": APPLICATION_API,
            "kind": "Application",
            "metadata": {"name": self.spec.application, "namespace": self.spec.namespace},
            "spec": {
                "project": self.spec.project,
                "source": self._source(),
                "destination": self._destination(),
                "syncPolicy": {
                    "automated": {"prune": False, "selfHeal": self.spec.self_heal},
                    "syncOptions": ["CreateNamespace=true", "ServerSideApply=true"],
                },
            },
        }

    def _resources(self, desired: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for body in desired:
            group, _, version = str(body["apiVersion"]).rpartition("/")
            meta = body["metadata"]
            live = self._live(body)
            item: dict[str, Any] = {"group": group} if group else {}  # omitempty
            item.update(version=version, kind=body["kind"])
            if meta.get("namespace"):
                item["namespace"] = meta["namespace"]
            item["name"] = meta["name"]
            item["status"] = "Synced" if _contained(body, live) else "OutOfSync"
            health = _health(live)
            if health is not None:
                item["health"] = {"status": health}
            out.append(item)
        return out

    def _sync_status(self, resources: list[dict[str, Any]]) -> dict[str, Any]:
        synced = all(r["status"] == "Synced" for r in resources)
        return {
            "status": "Synced" if synced else "OutOfSync",
            "revision": self.synced,
            "comparedTo": {"source": self._source(), "destination": self._destination()},
        }

    def _health(self, resources: list[dict[str, Any]]) -> str:
        states = {r.get("health", {}).get("status") for r in resources}
        return next((s for s in ("Degraded", "Progressing") if s in states), "Healthy")

    def _record(self, head: str, started: str, desired: list[dict[str, Any]], problem: str) -> None:
        """The status after a sync of ``head`` (``problem``: why it failed, "" when not)."""
        now = rfc3339(self.sim.now())
        resources = self._resources(desired)
        operation = {"sync": {"revision": head}, "initiatedBy": {"automated": True}}
        applied = [
            {
                **{k: r[k] for k in ("group", "version", "kind", "namespace", "name") if k in r},
                "status": "Synced",
                "message": f"{r['kind'].lower()}/{r['name']} serverside-applied",
                "syncPhase": "Sync",
                "hookPhase": "Running",
            }
            for r in resources
        ]
        result = {"revision": head, "source": self._source(), "resources": applied}
        self._history += 0 if problem else 1
        status: dict[str, Any] = {
            "sync": self._sync_status(resources),
            "health": {"status": self._health(resources)},
            "resources": resources,
            "reconciledAt": now,
            "sourceType": "Directory",
            "operationState": {
                "operation": operation,
                "phase": "Failed" if problem else "Succeeded",
                "message": problem or "successfully synced (all tasks run)",
                "startedAt": started,
                "finishedAt": now,
                "syncResult": result,
            },
        }
        if not problem:
            app = self._application_object() or {}
            history = list((app.get("status") or {}).get("history") or [])
            history.append(
                {"id": self._history, "revision": head, "deployStartedAt": started,
                 "deployedAt": now, "source": self._source()}
            )  # fmt: skip
            status["history"] = history[-10:]  # revisionHistoryLimit's default
        self._write_status(status)

    def _refresh(self) -> None:
        resources = self._resources(self._desired)
        self._write_status(
            {
                "sync": self._sync_status(resources),
                "health": {"status": self._health(resources)},
                "resources": resources,
                "reconciledAt": rfc3339(self.sim.now()),
            }
        )

    def _application_object(self) -> dict[str, Any] | None:
        return self._status.get(
            APPLICATION_API, "Application", self.spec.application, self.spec.namespace
        )

    def _write_status(self, status: dict[str, Any]) -> None:
        self._status.patch(
            APPLICATION_API,
            "Application",
            self.spec.application,
            {"status": status},
            namespace=self.spec.namespace,
            patch_type="merge",
        )


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _describe(body: Mapping[str, Any]) -> str:
    meta = body.get("metadata") or {}
    where = f"{meta.get('namespace')}/" if meta.get("namespace") else ""
    return f"{body.get('kind')} {where}{meta.get('name')}"


def _contained(desired: object, live: object) -> bool:
    """Whether every field ``desired`` sets has that value in ``live`` (fields only live are
    not looked at, as Argo CD's diff does not see them; lists compare item by item)."""
    if isinstance(desired, Mapping):
        return isinstance(live, Mapping) and all(
            _contained(value, live.get(key)) for key, value in desired.items() if value is not None
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(desired) == len(live)
            and all(_contained(d, v) for d, v in zip(desired, live, strict=True))
        )
    return desired == live


def _health(live: Mapping[str, Any] | None) -> str | None:
    """Argo CD's health of a workload (Healthy once every replica is updated and available,
    else Progressing; Missing when absent); None for kinds without a health check."""
    if live is None:
        return "Missing"
    if live.get("kind") not in ("Deployment", "StatefulSet", "ReplicaSet"):
        return None
    spec, status = live.get("spec") or {}, live.get("status") or {}
    wanted = int(spec.get("replicas", 1))
    observed = int(status.get("observedGeneration", 0)) >= int(
        (live.get("metadata") or {}).get("generation", 0)
    )
    ready = status.get("availableReplicas", status.get("readyReplicas", 0)) or 0
    return "Healthy" if observed and int(ready) >= wanted else "Progressing"
