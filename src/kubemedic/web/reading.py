"""What the dashboard reads: the archive's pages and its incidents, shaped as JSON-ready dicts.

The archive is only read (``transaction(write=False)``). Incidents are grouped from the whole
archive of one cluster as ``kubemedic incidents`` groups them (so an id means the same incident
there and here) and kept in memory until ``browsing.version`` says a row they are made of
changed (looked at no more often than every ``INCIDENTS_FRESH`` seconds); their list is then
paged in memory by the same keyset rule as the tables (newest start first, then id). Related
incidents are worked out per incident when one is shown (``linking.Links``; the last
``LINKED_KEPT`` are kept): every incident of a busy pool relates to every other, and linking all
10,000 incidents of an archive would make twenty million links nobody reads.

Times go out as RFC 3339 in UTC (``2023-02-01T19:40:00Z``, microseconds when there are some).
"""

from __future__ import annotations

import gc
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kubemedic.incidents import DEFAULT_WINDOW, Incident, linking
from kubemedic.incidents import archive as incident_archive
from kubemedic.model import objects, timing
from kubemedic.model.durations import parse_seconds
from kubemedic.store import browsing
from kubemedic.store.db import Archive

__all__ = ["TIME_COLUMNS", "NotFound", "Reader", "as_time", "shaped"]

TIME_COLUMNS: Final = frozenset(
    {
        "first_seen",
        "last_seen",
        "deleted_at",
        "recorded_at",
        "started_at",
        "finished_at",
        "at",
        "since",
        "updated_at",
        "lastSeen",
    }
)


class NotFound(browsing.PageError):
    """A cluster, incident or node the archive does not hold."""


def as_time(seconds: Any) -> str | None:
    """Epoch seconds as RFC 3339 (None stays None)."""
    if type(seconds) not in (int, float):
        return None
    return objects.format_exact_time(datetime.fromtimestamp(seconds, UTC))


def shaped(row: Mapping[str, Any]) -> dict[str, Any]:
    """A table row for JSON: times as RFC 3339, the row id kept as ``id``."""
    return {key: as_time(value) if key in TIME_COLUMNS else value for key, value in row.items()}


@dataclass
class _Cached:
    version: tuple[Any, ...]
    incidents: list[Incident]
    """Newest start first, without their related links."""
    links: linking.Links
    by_id: dict[str, Incident] = field(default_factory=dict)
    positions: dict[str, int] = field(default_factory=dict)
    """Each id's position in ``links.incidents``."""
    linked: OrderedDict[str, Incident] = field(default_factory=OrderedDict)
    built: float = 0.0


class Reader:
    """Read-only access to one open archive for the API and the pages (thread-safe)."""

    CLUSTERS_TTL: Final = 30.0
    LINKED_KEPT: Final = 256
    """Incidents kept with their related links worked out (most recently shown)."""
    INCIDENTS_FRESH: Final = 10.0
    """Seconds a grouping of incidents is served after the archive changed: a recorder writing
    every second would otherwise have them grouped again on every request."""

    def __init__(self, archive: Archive, *, cluster: str | None = None) -> None:
        self.archive = archive
        self.default_cluster = cluster
        self._lock = threading.Lock()
        self._incidents: dict[str, _Cached] = {}
        self._clusters: tuple[float, list[str]] | None = None

    # -- clusters and time ---------------------------------------------------------------

    def clusters(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            if self._clusters is not None and now - self._clusters[0] < self.CLUSTERS_TTL:
                return self._clusters[1]
        with self.archive.transaction(write=False) as connection:
            found = browsing.clusters(connection)
        with self._lock:
            self._clusters = (now, found)
        return found

    def cluster(self, wanted: str | None) -> str:
        """``wanted``, else ``--cluster``, else the archive's first cluster; ``NotFound`` for
        a cluster it does not hold (an empty archive has the one cluster ``""``)."""
        known = self.clusters()
        chosen = wanted or self.default_cluster
        if chosen is None:
            return known[0] if known else ""
        if chosen not in known:
            raise NotFound(
                f"the archive holds no cluster {chosen!r} (it holds: {', '.join(known) or 'none'})"
            )
        return chosen

    def moment(self, name: str, text: str | None, cluster: str) -> float | None:
        """``since``/``until``: RFC 3339 with a zone, or a duration back from the archive's
        newest event or finding (``1h``: the last hour the archive saw)."""
        if text is None or not text.strip():
            return None
        try:
            back = parse_seconds(text.strip())
        except ValueError:
            try:
                return timing.parse_time_flag(name, text.strip()).timestamp()
            except timing.TimeError:
                raise browsing.PageError(
                    f"{name} {text[:200]!r}: expected a duration such as 30m or 2h, or an "
                    "RFC 3339 time with a zone such as 2023-02-01T20:00:00Z"
                ) from None
        return self.now(cluster) - back

    def now(self, cluster: str) -> float:
        """The archive's "now" for ``cluster``: its newest event or finding (the recorder may
        have run in the past, or on a simulator's clock), else the clock's."""
        return self.read("newest", cluster) or datetime.now(UTC).timestamp()

    # -- tables ----------------------------------------------------------------------------

    def page(self, name: str, cluster: str, /, **arguments: Any) -> dict[str, Any]:
        """One page of ``browsing.<name>`` as ``{"items": [...], "continue": token}``."""
        function = getattr(browsing, name)
        with self.archive.transaction(write=False) as connection:
            found: browsing.Page = function(connection, cluster, **arguments)
        return {"items": [shaped(row) for row in found.items], "continue": found.next}

    def read(self, name: str, /, *arguments: Any, **keywords: Any) -> Any:
        """``browsing.<name>(connection, *arguments, **keywords)`` in a read transaction."""
        function = getattr(browsing, name)
        with self.archive.transaction(write=False) as connection:
            return function(connection, *arguments, **keywords)

    # -- incidents ----------------------------------------------------------------------------

    def incidents(self, cluster: str) -> list[Incident]:
        """The cluster's incidents, newest start first, without their related links (ask
        ``incident`` or ``related_count``)."""
        return self._cached(cluster).incidents

    def incident(self, cluster: str, incident_id: str, *, linked: bool = True) -> Incident:
        """One incident, with its related links unless ``linked`` is false."""
        cached = self._cached(cluster)
        found = cached.by_id.get(incident_id)
        if found is None:
            raise NotFound(f"no incident {incident_id!r} in cluster {cluster!r}")
        if not linked:
            return found
        with self._lock:
            known = cached.linked.get(incident_id)
            if known is not None:
                cached.linked.move_to_end(incident_id)
                return known
        known = replace(found, related=cached.links.related(cached.positions[incident_id]))
        with self._lock:
            cached.linked[incident_id] = known
            while len(cached.linked) > self.LINKED_KEPT:
                cached.linked.popitem(last=False)
        return known

    def related_count(self, cluster: str, incident: Incident) -> int:
        """How many incidents ``incident`` is related to (without linking them)."""
        cached = self._cached(cluster)
        position = cached.positions.get(incident.id)
        if position is None:
            return len(incident.related)
        with self._lock:  # Links memoizes its counts
            return cached.links.count(position)

    def _cached(self, cluster: str) -> _Cached:
        with self._lock:
            cached = self._incidents.get(cluster)
        if cached is not None and time.monotonic() - cached.built < self.INCIDENTS_FRESH:
            return cached
        version = self.read("version", cluster)
        if cached is not None and cached.version == version:
            cached.built = time.monotonic()
            return cached
        with self.archive.failures():
            built = incident_archive.incidents(self.archive.engine, cluster=cluster, linked=False)
        links = linking.Links(built)
        _settle()
        positions = {incident.id: index for index, incident in enumerate(built)}
        built.sort(key=lambda incident: (incident.start, incident.id), reverse=True)
        cached = _Cached(
            version,
            built,
            links,
            {incident.id: incident for incident in built},
            positions,
            built=time.monotonic(),
        )
        with self._lock:
            self._incidents[cluster] = cached
        return cached

    def incident_page(
        self, cluster: str, *, open_only: bool, limit: int, token: str | None
    ) -> tuple[list[Incident], str | None]:
        """A page of incidents (newest start first); ``open_only`` keeps those whose end is
        within ``DEFAULT_WINDOW`` of the archive's newest event."""
        if not 1 <= limit <= browsing.MAX_LIMIT:
            raise browsing.PageError(f"limit {limit}: expected a number from 1 to 500")
        found: Iterable[Incident] = self.incidents(cluster)
        if open_only:
            found = self.open_incidents(cluster, found)
        if token is not None:
            at, _ = browsing.decode_token("incidents", token)
            key = _incident_key_of_token(token)
            found = [i for i in found if (i.start.timestamp(), i.id) < (at or 0.0, key)]
        items = list(found)
        page = items[:limit]
        following = None
        if len(items) > limit:
            last = page[-1]
            following = _incident_token(last)
        return page, following

    def open_incidents(self, cluster: str, found: Iterable[Incident]) -> list[Incident]:
        newest = datetime.fromtimestamp(self.now(cluster), UTC)
        return [i for i in found if i.end >= newest - DEFAULT_WINDOW]

    def related(self, cluster: str, incident: Incident) -> list[Incident]:
        cached = self._cached(cluster)
        return [cached.by_id[link.id] for link in incident.related if link.id in cached.by_id]

    def node_incidents(self, cluster: str, node: str) -> list[Incident]:
        return [i for i in self.incidents(cluster) if node in i.nodes]


def _settle() -> None:
    """Leave the incidents just built out of the collector's full passes.

    Ten thousand incidents are millions of objects that live until the next grouping; every
    full pass of the cyclic collector walked them all (a second, in the middle of some
    request). They hold no cycles, so refcounting frees them: what was alive is moved to the
    permanent generation (``gc.freeze``), after the previous freeze is undone and a full pass
    has collected what died since, so nothing stays frozen beyond one grouping.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _incident_token(incident: Incident) -> str:
    # The id rides in the token's id slot as its 32-bit hex value: ids are ``inc-`` + 8 hex.
    return browsing.encode_token("incidents", incident.start.timestamp(), _id_number(incident.id))


def _id_number(incident_id: str) -> int:
    try:
        return int(incident_id.removeprefix("inc-"), 16)
    except ValueError:
        return 0


def _incident_key_of_token(token: str) -> str:
    _, number = browsing.decode_token("incidents", token)
    return f"inc-{number:08x}"


def window_of(incident: Incident) -> tuple[datetime, datetime]:
    """The time axis of an incident's chart: from its first finding or signal to its last, with
    a little room on both sides."""
    starts = [incident.start, *(e.first_seen for e in incident.findings)]
    ends = [incident.end, *(e.last_seen for e in incident.findings)]
    starts += [s.at for s in incident.signals]
    ends += [s.last for s in incident.signals]
    low, high = min(starts), max(ends)
    room = max(high - low, timedelta(minutes=1)) / 20
    return low - room, high + room
