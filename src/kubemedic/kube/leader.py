"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it.

Several kubemedic replicas may run; only the holder of one Lease acts. The protocol is
client-go's ``tools/leaderelection`` with a ``LeaseLock`` (``tryAcquireOrRenew``):

- **Record.** The Lease's spec is the election record: ``holderIdentity``,
  ``leaseDurationSeconds``, ``acquireTime`` and ``renewTime`` (``MicroTime``: RFC 3339 with
  microseconds) and ``leaseTransitions`` (how many times the Lease changed hands).
- **Acquire** when there is no Lease (create it; ``409 AlreadyExists`` means another candidate
  created it first), when it has no holder (released), when we hold it, or when it expired.
- **Expiry is judged on the local clock, never on the holder's timestamps.** A candidate
  remembers when *it* last saw the record change (``observedTime``) and treats the Lease as
  expired once ``observedTime + leaseDurationSeconds`` (the duration the record states) has
  passed without a further change. ``renewTime`` only serves to make each renewal a change, so
  the election tolerates any clock skew between replicas (not a skew *rate*: client-go's
  ``doc.go``).
- **Every write is resourceVersion-guarded** (an update carries the ``metadata.resourceVersion``
  it read); a ``409 Conflict`` means another candidate wrote first and we lost that round.
- **Renew** every ``retry_period`` while leading, first optimistically with the object we last
  wrote (client-go's fast path), then by reading the Lease again. Without a successful renewal
  for ``renew_deadline`` the leader steps down (``on_stopped_leading``) and campaigns again.
  A leader counts its deadline from when it *sent* its last successful write, a follower its
  expiry from when it *saw* that write, so with ``lease_duration > renew_deadline`` the old
  leader has stopped before anyone can take over.
- **Release** (client-go's ``ReleaseOnCancel``): the leader writes ``holderIdentity: ""`` and
  ``leaseDurationSeconds: 1`` so another candidate acquires at its next try instead of waiting
  out the lease. The leader stops acting *before* it sends that write.

Waiting is client-go's too: candidates retry every ``retry_period`` times a random factor up to
``1 + 1.2`` (``wait.JitterUntil``); leaders renew every ``retry_period``. All times, durations
included, are read from the ``Clock`` (against the simulator, its virtual clock).

Differences from client-go: ``run`` campaigns again after losing the lease (client-go's ``Run``
returns, and a process usually exits); ``on_stopped_leading`` is called only after leading;
``on_new_leader`` is not called when the Lease has no holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from kubemedic.errors import KubemedicError
from kubemedic.kube.api import Api, ApiError, Conflict, ConnectionLost, NotFound
from kubemedic.kube.clock import Clock, ServerClock
from kubemedic.model.objects import format_micro_time, parse_time

__all__ = ["JITTER_FACTOR", "LeaderElector", "LeaseError", "LeaseRecord", "micro_time"]

LOG = logging.getLogger("kubemedic.leader")

#: client-go's ``JitterFactor``: a candidate waits ``retry_period * (1 + rand * 1.2)``.
JITTER_FACTOR = 1.2

T = TypeVar("T")


class LeaseError(KubemedicError, ValueError):
    """A Lease whose spec kubemedic cannot read (names the Lease and the field)."""


#: ``metav1.MicroTime`` as kube-apiserver writes it: ``2026-11-30T05:21:32.123456Z``.
micro_time = format_micro_time


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The election record a Lease's spec carries (client-go's ``LeaderElectionRecord``)."""

    holder: str = ""
    duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    transitions: int = 0

    @classmethod
    def from_lease(cls, body: Any, *, where: str) -> LeaseRecord:
        if not isinstance(body, dict):
            raise LeaseError(f"{where}: expected a Lease object, got {type(body).__name__}")
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise LeaseError(f"{where}: spec is not an object")
        holder = spec.get("holderIdentity") or ""
        if not isinstance(holder, str):
            raise LeaseError(f"{where}: spec.holderIdentity is not a string: {holder!r}")
        return cls(
            holder=holder,
            duration_seconds=_count(spec, "leaseDurationSeconds", where),
            acquire_time=_micro(spec, "acquireTime", where),
            renew_time=_micro(spec, "renewTime", where),
            transitions=_count(spec, "leaseTransitions", where),
        )

    def to_spec(self) -> dict[str, Any]:
        """The spec fields this record sets (other spec fields of the Lease are kept)."""
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "acquireTime": micro_time(self.acquire_time) if self.acquire_time else None,
            "renewTime": micro_time(self.renew_time) if self.renew_time else None,
            "leaseTransitions": self.transitions,
        }


def _count(spec: Mapping[str, Any], field: str, where: str) -> int:
    value = spec.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LeaseError(f"{where}: spec.{field} is not a non-negative integer: {value!r}")
    return value


def _micro(spec: Mapping[str, Any], field: str, where: str) -> datetime | None:
    value = spec.get(field)
    if value is None:
        return None
    moment = parse_time(value)
    if moment is None:
        raise LeaseError(f"{where}: spec.{field} is not an RFC 3339 time: {value!r}")
    return moment


class LeaderElector:
    """Campaign for one Lease and keep it while alive; see the module docstring.

    Callbacks are plain callables run on the elector's task (start long work as a task from
    ``on_started_leading`` and stop it from ``on_stopped_leading``); an exception in one is
    logged, not raised.
    """

    def __init__(
        self,
        api: Api,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock,
        on_started_leading: Callable[[], object] | None = None,
        on_stopped_leading: Callable[[], object] | None = None,
        on_new_leader: Callable[[str], object] | None = None,
        release_on_stop: bool = True,
    ) -> None:
        for label, value in (("namespace", namespace), ("name", name), ("identity", identity)):
            if not value:
                raise ValueError(f"leader election: {label} must not be empty")
        if retry_period <= 0:
            raise ValueError(f"leader election: retry_period must be positive, got {retry_period}")
        if lease_duration <= renew_deadline:
            raise ValueError(
                f"leader election: lease_duration ({lease_duration} s) must be greater than "
                f"renew_deadline ({renew_deadline} s)"
            )
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(
                f"leader election: renew_deadline ({renew_deadline} s) must be greater than "
                f"{JITTER_FACTOR} x retry_period ({retry_period} s)"
            )
        self._api = api
        self._clock = clock
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_stop = release_on_stop
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self._path = f"{self._collection}/{name}"
        self._observed: LeaseRecord | None = None
        self._observed_at: datetime | None = None
        self._lease: dict[str, Any] | None = None  # last Lease read or written
        self._leading = False
        self._renewed_at: datetime | None = None  # when the last successful write was sent
        self._reported = ""
        self._halt = asyncio.Event()
        self._writing = asyncio.Lock()

    @property
    def lease(self) -> str:
        """``namespace/name`` of the Lease."""
        return f"{self.namespace}/{self.name}"

    @property
    def is_leader(self) -> bool:
        """Leading, and the last successful renewal is less than ``renew_deadline`` old."""
        return (
            self._leading
            and self._renewed_at is not None
            and self._clock.now() < self._renewed_at + timedelta(seconds=self.renew_deadline)
        )

    @property
    def record(self) -> LeaseRecord | None:
        """The election record as last read or written."""
        return self._observed

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Campaign and lead until ``stop`` is set or ``release()`` is called; then, when
        leading and ``release_on_stop``, release the Lease. Cancelling the task instead stops
        leading (``on_stopped_leading``) without a word to the server, as a crash would: the
        others take over when the lease expires."""
        stop = stop if stop is not None else asyncio.Event()
        self._halt.clear()
        if isinstance(self._clock, ServerClock) and not self._clock.synced:
            await self._clock.sync()
        LOG.info("%s: campaigning for leader lease %s", self.identity, self.lease)
        try:
            while not self._halted(stop):
                if await self._attempt(self.renew_deadline):
                    self._start_leading()
                    await self._lead(stop)
                    if self._leading:
                        break  # stopped while leading
                jitter = 1.0 + JITTER_FACTOR * random.random()  # noqa: S311 (not for secrets)
                if await self._pause(self.retry_period * jitter, stop):
                    break
        except asyncio.CancelledError:
            self._stop_leading("the election task was cancelled")
            raise
        if self.release_on_stop and not self._halt.is_set():
            await self.release()
        else:
            self._stop_leading("the election stopped")

    async def release(self) -> bool:
        """Give the Lease up now if it names us (client-go's ``ReleaseOnCancel``): stop leading,
        then write ``holderIdentity: ""``, ``leaseDurationSeconds: 1``, ``acquireTime`` and
        ``renewTime`` now, ``leaseTransitions`` unchanged. A running ``run()`` returns.
        True when the Lease no longer names us."""
        self._halt.set()
        async with self._writing:
            self._stop_leading("releasing the lease")
            for _ in range(2):  # once more when something else touched the Lease meanwhile
                record, lease = self._observed, self._lease
                if record is None or lease is None or record.holder != self.identity:
                    return True
                now = self._clock.now()
                released = LeaseRecord(
                    holder="",
                    duration_seconds=1,
                    acquire_time=now,
                    renew_time=now,
                    transitions=record.transitions,
                )
                try:
                    await self._update(lease, released)
                except NotFound:
                    return True  # deleted: it names nobody
                except Conflict as exc:
                    if not await self._reread():
                        LOG.warning("%s: could not release %s: %s", self.identity, self.lease, exc)
                        return False
                    continue
                except ApiError as exc:
                    LOG.warning("%s: could not release %s: %s", self.identity, self.lease, exc)
                    return False
                except ConnectionLost as exc:
                    LOG.warning("%s: could not release %s: %s", self.identity, self.lease, exc)
                    return False
                LOG.info("%s: released leader lease %s", self.identity, self.lease)
                return True
            return False

    # -- campaigning and leading ------------------------------------------------------------

    async def _lead(self, stop: asyncio.Event) -> None:
        """Renew every ``retry_period``; return when stopped (still leading) or when the lease
        is lost (no successful renewal within ``renew_deadline``, or another holder)."""
        while not await self._pause(self.retry_period, stop):
            while True:
                assert self._renewed_at is not None
                deadline = self._renewed_at + timedelta(seconds=self.renew_deadline)
                left = (deadline - self._clock.now()).total_seconds()
                if left <= 0:
                    self._stop_leading(f"no successful renewal for {self.renew_deadline:g} s")
                    return
                if await self._attempt(left):
                    LOG.debug("%s: renewed %s", self.identity, self.lease)
                    break
                if not self._leading:
                    return  # another holder
                if await self._pause(min(self.retry_period, left), stop):
                    return

    async def _attempt(self, limit: float) -> bool:
        """One ``tryAcquireOrRenew``, abandoned after ``limit`` seconds of the clock."""
        async with self._writing:
            if self._halt.is_set():
                return False
            outcome = await self._within(self._try_acquire_or_renew(), limit)
            if outcome is None:
                LOG.warning("%s: no answer about %s within %g s", self.identity, self.lease, limit)
            return bool(outcome)

    async def _try_acquire_or_renew(self) -> bool:
        now = self._clock.now()
        # 1. The leader's fast path: update the object we last wrote, assuming it is current.
        if self.is_leader and self._lease is not None and self._observed is not None:
            renewed = LeaseRecord(
                holder=self.identity,
                duration_seconds=self._duration_seconds,
                acquire_time=self._observed.acquire_time,
                renew_time=now,
                transitions=self._observed.transitions,
            )
            try:
                await self._update(self._lease, renewed)
            except (ApiError, ConnectionLost) as exc:
                LOG.info(
                    "%s: optimistic renewal failed (%s); reading the Lease", self.identity, exc
                )
            else:
                self._renewed_at = now
                return True
        # 2. Read the record, or create it.
        try:
            lease = await self._api.request("GET", self._path)
        except NotFound:
            return await self._create(now)
        except ApiError as exc:
            LOG.warning("%s: cannot read %s: %s", self.identity, self.lease, exc)
            return False
        except ConnectionLost as exc:
            LOG.warning("%s: cannot read %s: %s", self.identity, self.lease, exc)
            return False
        try:
            current = LeaseRecord.from_lease(lease, where=self._path)
        except LeaseError as exc:
            LOG.error("%s: %s", self.identity, exc)
            return False
        self._observe(current, lease)
        # 3. Held by someone else and not expired (on our observation of it): wait.
        if current.holder and current.holder != self.identity and self._lease_valid(now):
            self._stop_leading(f"the lease is held by {current.holder}")
            return False
        # 4. Renew (keep acquireTime and transitions) or take over (one more transition).
        if current.holder == self.identity:
            wanted = LeaseRecord(
                holder=self.identity,
                duration_seconds=self._duration_seconds,
                acquire_time=current.acquire_time or now,
                renew_time=now,
                transitions=current.transitions,
            )
        else:
            wanted = LeaseRecord(
                holder=self.identity,
                duration_seconds=self._duration_seconds,
                acquire_time=now,
                renew_time=now,
                transitions=current.transitions + 1,
            )
        try:
            await self._update(lease, wanted)
        except Conflict:
            LOG.info("%s: lost the race for %s (409 Conflict)", self.identity, self.lease)
            return False
        except ApiError as exc:
            LOG.warning("%s: cannot update %s: %s", self.identity, self.lease, exc)
            return False
        except ConnectionLost as exc:
            LOG.warning("%s: cannot update %s: %s", self.identity, self.lease, exc)
            return False
        if current.holder != self.identity:
            LOG.info(
                "%s: took over %s from %s (transition %d)",
                self.identity,
                self.lease,
                current.holder or "nobody",
                wanted.transitions,
            )
        self._renewed_at = now
        return True

    async def _create(self, now: datetime) -> bool:
        record = LeaseRecord(
            holder=self.identity,
            duration_seconds=self._duration_seconds,
            acquire_time=now,
            renew_time=now,
            transitions=0,
        )
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        try:
            created = await self._api.request("POST", self._collection, body=body)
        except Conflict:
            LOG.info("%s: %s was created by another candidate first", self.identity, self.lease)
            return False
        except ApiError as exc:
            LOG.warning("%s: cannot create %s: %s", self.identity, self.lease, exc)
            return False
        except ConnectionLost as exc:
            LOG.warning("%s: cannot create %s: %s", self.identity, self.lease, exc)
            return False
        LOG.info("%s: created %s", self.identity, self.lease)
        self._observe_written(record, created, body)
        self._renewed_at = now
        return True

    async def _update(self, lease: Mapping[str, Any], record: LeaseRecord) -> None:
        """PUT ``lease`` with ``record`` in its spec, guarded by the resourceVersion it carries.
        On success the written record is what we observe."""
        metadata = {k: v for k, v in (lease.get("metadata") or {}).items() if k != "managedFields"}
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {**(lease.get("spec") or {}), **record.to_spec()},
        }
        written = await self._api.request("PUT", self._path, body=body)
        self._observe_written(record, written, body)

    async def _reread(self) -> bool:
        """Read the Lease again (after a conflict); False when it cannot be read."""
        try:
            lease = await self._api.request("GET", self._path)
            self._observe(LeaseRecord.from_lease(lease, where=self._path), lease)
        except (ApiError, ConnectionLost, LeaseError) as exc:
            LOG.warning("%s: cannot read %s: %s", self.identity, self.lease, exc)
            return False
        return True

    # -- bookkeeping ------------------------------------------------------------------------

    @property
    def _duration_seconds(self) -> int:
        return max(1, math.ceil(self.lease_duration))  # an int32 on the wire: round up

    def _observe(self, record: LeaseRecord, lease: dict[str, Any]) -> None:
        """Remember the Lease; restart the expiry count when the record changed."""
        self._lease = lease
        if record != self._observed:
            self._observed = record
            self._observed_at = self._clock.now()
        if record.holder and record.holder != self._reported:
            self._reported = record.holder
            LOG.info("%s: the leader of %s is %s", self.identity, self.lease, record.holder)
            self._call(self._on_new_leader, record.holder)

    def _observe_written(self, record: LeaseRecord, answer: Any, sent: dict[str, Any]) -> None:
        """Observe what the server stored (its answer), or what we sent if it echoed nothing."""
        if isinstance(answer, dict):
            with contextlib.suppress(LeaseError):
                record = LeaseRecord.from_lease(answer, where=self._path)
            self._observe(record, answer)
        else:
            self._observe(record, sent)

    def _lease_valid(self, now: datetime) -> bool:
        if self._observed is None or self._observed_at is None:
            return False
        seconds = self._observed.duration_seconds or self._duration_seconds
        return self._observed_at + timedelta(seconds=seconds) > now

    def _start_leading(self) -> None:
        if self._leading:
            return
        self._leading = True
        LOG.info("%s: started leading %s", self.identity, self.lease)
        self._call(self._on_started)

    def _stop_leading(self, reason: str) -> None:
        if not self._leading:
            return
        self._leading = False
        LOG.info("%s: stopped leading %s: %s", self.identity, self.lease, reason)
        self._call(self._on_stopped)

    def _call(self, callback: Callable[..., object] | None, *args: Any) -> None:
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            LOG.exception("%s: a leader election callback failed", self.identity)

    def _halted(self, stop: asyncio.Event) -> bool:
        return stop.is_set() or self._halt.is_set()

    async def _pause(self, seconds: float, stop: asyncio.Event) -> bool:
        """Sleep ``seconds`` of the clock; True (at once) when stopped or released."""
        if self._halted(stop):
            return True
        await _first(self._clock.sleep(seconds), stop.wait(), self._halt.wait())
        return self._halted(stop)

    async def _within(self, work: Awaitable[T], seconds: float) -> T | None:
        """``work``'s result, or None when ``seconds`` of the clock pass first."""
        task = asyncio.ensure_future(work)
        timer = asyncio.ensure_future(self._clock.sleep(seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await _settle((task, timer))
        if task.cancelled():
            if not timer.cancelled():
                timer.result()  # a failure of the clock surfaces here
            return None
        if not timer.cancelled():
            timer.exception()  # the work finished first: whatever the timer did is moot
        return task.result()


async def _first(*work: Awaitable[object]) -> None:
    """Wait until one of ``work`` finishes; cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await _settle(tasks)
    for task in tasks:
        if not task.cancelled():
            task.result()  # surface a failure of the clock's sleep


async def _settle(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel the unfinished ``tasks`` and wait until they end. ``asyncio.wait`` (rather than
    awaiting each task under a suppressed CancelledError) lets a cancellation of the caller
    itself through instead of swallowing it."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
