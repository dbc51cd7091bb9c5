"""The Kubernetes API emulator: an in-memory API server real clients accept unchanged.

It speaks the REST API in JSON the way kube-apiserver 1.32 does: discovery (``/api``,
``/apis``, group and group-version documents), OpenAPI v3 (so ``kubectl apply`` validates on the
server and finds strategic-merge metadata), CRUD, list and watch with selectors and pagination,
the status, scale, eviction and binding subresources, server-side apply with managedFields, and
``Status`` errors with the real wording. Tables are served when the client asks for them, so
``kubectl get`` prints the real columns.

The server owns a virtual clock (``GET /kubemedic.io/v1/clock``; ``PUT`` changes speed, pauses,
resumes or jumps); every timestamp it writes and each response's ``Date`` header come from it.
``/kubemedic.io/v1/faults`` sets fault injection (:mod:`kubemedic.sim.apiserver.http.faults`).

Request handling lives in :mod:`kubemedic.sim.apiserver.http.handling`; this module assembles the
parts and runs the aiohttp application.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from aiohttp import web

from kubemedic.model.objects import gc_paused
from kubemedic.sim.apiserver.http.faults import Faults
from kubemedic.sim.apiserver.http.recording import RequestLog
from kubemedic.sim.apiserver.openapi import crds
from kubemedic.sim.apiserver.openapi.gitops_crds import gitops_crds
from kubemedic.sim.apiserver.registry import admitting, defaulting, zeroing
from kubemedic.sim.apiserver.registry.collecting import Collector
from kubemedic.sim.apiserver.registry.writing import WriteOptions, Writer
from kubemedic.sim.apiserver.storage import DEFAULT_HISTORY, Store
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.apiresources import Registry
from kubemedic.sim.machinery.clock import VirtualClock, rfc3339
from kubemedic.sim.machinery.definitions import definitions
from kubemedic.sim.machinery.objects import Obj, clone

#: Namespaces every cluster starts with.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

#: How often the built-in control loops run (wall seconds).
TICK_SECONDS = 0.05


class ApiServer:
    """One emulated cluster's API: storage, control loops and the HTTP application."""

    def __init__(
        self,
        *,
        clock: VirtualClock | None = None,
        history: int = DEFAULT_HISTORY,
        event_ttl: timedelta = timedelta(hours=1),
        faults: Faults | None = None,
        bookmark_seconds: float = 1.0,
        seed: int | None = None,
    ) -> None:
        """``seed`` makes object uids and generated names repeat from run to run (the
        simulator's determinism); without it they are random, as on a real server."""
        self.clock = clock or VirtualClock()
        self.registry = Registry()
        self.defs = definitions()
        self.store = Store(history=history, wall=time.monotonic)
        self.writer = Writer(self.store, self.clock, self.defs)
        if seed is not None:
            self.writer.ids = random.Random(seed)  # noqa: S311 (identifiers, not secrets)
        self.collector = Collector(self.writer, self.registry, event_ttl=event_ttl)
        self.faults = faults or Faults()
        self.bookmark_seconds = bookmark_seconds
        self._runner: web.AppRunner | None = None
        self._ticker: asyncio.Task[None] | None = None
        self.port = 0
        #: Called before a get or list of a store (``pods.metrics.k8s.io``...): lets the
        #: simulator materialise computed objects only when someone reads them.
        self.read_hooks: dict[str, Callable[[], None]] = {}
        #: When set, every request to a served resource is noted in it (its RBAC attributes):
        #: tests compare the calls a component makes with the permissions it is deployed with.
        self.request_log: RequestLog | None = None
        #: Called with the aiohttp application before the API's own routes are added: other
        #: services served on the same port (the simulated cloud's Keystone and Nova) add theirs.
        self.routes: list[Callable[[web.Application], None]] = []
        for name in SYSTEM_NAMESPACES:
            self.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
        # kube-apiserver's bootstrap creates the system PriorityClasses, as any client would.
        classes = self.registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        assert classes is not None
        for body in admitting.system_priority_classes():
            self.writer.create(classes, "", body, WriteOptions(manager="kube-apiserver"))
        # Custom resources are announced by their definitions, as on a real cluster (lightkube
        # and kubectl discover them through customresourcedefinitions).
        established = rfc3339(self.clock.now())
        self.load(
            [*crds.capi_crds(established_at=established), *gitops_crds(established_at=established)]
        )

    # loading ---------------------------------------------------------------------------------

    def load(self, objects: Iterable[Mapping[str, Any]], *, defaulted: bool = False) -> int:
        """Store objects as they are (status, uid, timestamps kept), as a restore would.

        Missing namespaces are created; objects of kinds the emulator does not serve are
        skipped. Returns how many objects were stored. The cyclic garbage collector is paused
        meanwhile: a restore builds hundreds of thousands of dicts and no garbage, and each
        collection would walk all of them again.

        Each object is defaulted as the real server defaults what it reads from storage (and
        zero values of fields without ``omitempty`` are filled in), which is most of the time
        a large restore takes. ``defaulted=True`` skips that for objects the caller knows to
        be in that form already, as :func:`kubemedic.sim.scenarios.generating.generate` makes them
        (its tests hold it to that); anything else must not be passed so.
        """
        with gc_paused():
            return self._load(objects, defaulted=defaulted)

    def _load(self, objects: Iterable[Mapping[str, Any]], *, defaulted: bool = False) -> int:
        stored = 0
        namespaces = self.registry.lookup("", "v1", "namespaces")
        assert namespaces is not None
        for body in objects:
            res = self.registry.for_kind(str(body.get("apiVersion", "")), str(body.get("kind", "")))
            if res is None:
                continue
            obj: Obj = clone(dict(body))
            meta = obj.setdefault("metadata", {})
            name = str(meta.get("name") or "")
            if not name:
                continue
            ns = str(meta.get("namespace") or "default") if res.namespaced else ""
            if res.namespaced:
                meta["namespace"] = ns
                if self.store.get("namespaces", ("", ns)) is None:
                    self._load(
                        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
                    )
            else:
                meta.pop("namespace", None)
            meta.setdefault("uid", self.writer.uid())
            meta.setdefault("creationTimestamp", rfc3339(self.clock.now()))
            if not res.custom and not defaulted:
                # The real server defaults what it reads back from storage, and prints the
                # zero values of fields without omitempty.
                defaulting.default_object(obj, group=res.group, version=res.version, kind=res.kind)
                schema = self.defs.for_kind(res.group, res.version, res.kind)
                zeroing.fill_required_scalars(obj, schema)
            if res.kind == "Namespace" and not res.group:
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj.setdefault("status", {"phase": "Active"})
            existing = self.store.get(res.store_key, (ns, name))
            entry = self.store.put(
                res.store_key, (ns, name), obj, event="ADDED" if existing is None else "MODIFIED"
            )
            # Serialise now, as kube-apiserver's watch cache keeps encoded objects: the first
            # list of a restored cluster then costs what any later one does.
            entry.warm()
            stored += 1
        self.collector.tick()
        return stored

    # running ---------------------------------------------------------------------------------

    def app(self) -> web.Application:
        from kubemedic.sim.apiserver.http.handling import Handler  # noqa: PLC0415

        handler = Handler(self)
        app = web.Application(middlewares=[handler.middleware], client_max_size=64 * 1024**2)
        for add in self.routes:
            add(app)
        app.router.add_route("*", "/{tail:.*}", handler.dispatch)
        return app

    async def start(self, *, host: str = "127.0.0.1", port: int = 0, tick: bool = True) -> int:
        """Serve on ``host:port`` (0 picks a free port); returns the bound port. ``tick=False``
        leaves the built-in control loops to a simulation that runs them on each of its
        passes."""
        self._runner = web.AppRunner(
            self.app(), access_log=None, handle_signals=False, shutdown_timeout=2.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or ()
        self.port = int(next(iter(sockets)).getsockname()[1]) if sockets else port
        if tick:
            self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())
        return self.port

    async def _tick_forever(self) -> None:
        while True:
            # A loop's write may lose a race with a client; the next tick retries.
            with contextlib.suppress(errors.StatusError):
                self.collector.tick()
            await asyncio.sleep(TICK_SECONDS)

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        self.store.close_watchers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def kubeconfig(url: str, *, name: str = "kubemedic-sim") -> dict[str, Any]:
    """A kubeconfig for the emulator (plain HTTP on localhost, no credentials)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": url}}],
        "users": [{"name": name, "user": {}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }
