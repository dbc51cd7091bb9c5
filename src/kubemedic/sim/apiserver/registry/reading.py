"""List and watch filtering: selectors, pagination, resourceVersion semantics, conversions.

List semantics follow the real server:

* ``resourceVersion`` unset: the most recent state (a consistent read). ``"0"``: any state (the
  emulator's state is always current, so the same). A number with ``resourceVersionMatch``
  ``NotOlderThan`` is served when the store is at least that new.
* ``limit``/``continue``: pages in key order; ``continue`` is an opaque token holding the list's
  resourceVersion and the last key. A token older than the watch history is refused with
  ``410 Gone`` (reason ``Expired``), exactly when the real server's compacted etcd would refuse
  it, and clients restart the list.
* Label and field selectors filter before pagination, so a page holds up to ``limit`` matches.

``events.k8s.io/v1`` reads the core events store and converts each object on the way out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kubemedic.sim.apiserver.registry import converting
from kubemedic.sim.apiserver.storage import Entry, Store
from kubemedic.sim.machinery import errors, fieldlabels, selecting
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.objects import Change, Key, Obj


@dataclass(frozen=True)
class Query:
    """The filter of a list or watch request."""

    namespace: str | None
    labels: selecting.LabelSelector | None = None
    fields: selecting.FieldSelector | None = None

    @classmethod
    def parse(
        cls, res: Resource, namespace: str | None, *, label_text: str, field_text: str
    ) -> Query:
        labels = selecting.LabelSelector.parse(label_text) if label_text.strip() else None
        fields = selecting.FieldSelector.parse(field_text) if field_text.strip() else None
        if fields is not None:
            # Labels are renamed to the stored shape (events.k8s.io ``regarding.name`` is the
            # stored core event's ``involvedObject.name``).
            fields = fieldlabels.check_supported(
                res.plural, res.group, fields, namespaced=res.namespaced, custom=res.custom
            )
        return cls(namespace, labels, fields)

    def predicate(self, res: Resource) -> Callable[[Obj], bool]:
        labels, fields = self.labels, self.fields
        if labels is None and fields is None:
            return _always
        plural, group = res.plural, res.group
        if res.store_key == "events":
            plural, group = "events", ""  # stored in the core shape

        def accepts(obj: Obj) -> bool:
            if labels is not None and not labels.matches(
                (obj.get("metadata") or {}).get("labels") or {}
            ):
                return False
            if fields is not None:
                return fields.matches(fieldlabels.selectable_fields(plural, group, obj))
            return True

        return accepts


def _always(obj: Obj) -> bool:
    return True


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    resource_version: int
    continue_token: str
    remaining: int | None


def list_page(
    store: Store,
    res: Resource,
    query: Query,
    *,
    limit: int = 0,
    continue_token: str = "",
    resource_version: str = "",
    match: str = "",
) -> Page:
    rv = store.resource_version
    if resource_version not in ("", "0") and match != "Exact":
        try:
            wanted = int(resource_version)
        except ValueError:
            raise errors.bad_request(f"invalid resourceVersion: {resource_version}") from None
        if wanted > rv:
            # storage.NewTooLargeResourceVersionError: client-go reflectors recognise the cause
            # and relist from the latest version.
            raise errors.StatusError(
                504,
                "Timeout",
                f"Timeout: Too large resource version: {wanted}, current: {rv}",
                causes=(errors.Cause("ResourceVersionTooLarge", "Too large resource version"),),
                retry_after=1,
                headers={"Retry-After": "1"},
            )
    if match == "Exact" and resource_version not in ("", str(rv)):
        raise errors.gone(
            f"too old resource version: {resource_version} ({store.oldest_watchable})"
        )
    after: Key | None = None
    if continue_token:
        list_rv, after = _decode_continue(continue_token)
        if 0 <= list_rv < store.oldest_watchable:
            # As etcd3's compactedContinue: the answer carries a token that continues at the
            # latest version (rv -1), for clients that accept an inconsistent remainder.
            raise ExpiredContinue(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list.",
                token=_encode_continue(-1, after),
            )
        rv = list_rv if 0 <= list_rv <= rv else rv
    accepts = query.predicate(res)
    found: list[Entry] = []
    last: Key | None = None
    more = False
    remaining: int | None = None
    entries = store.scan(res.store_key, namespace=query.namespace, after=after)
    for key, entry in entries:
        if not accepts(entry.obj):
            continue
        if limit and len(found) >= limit:
            more = True
            if query.labels is None and query.fields is None:
                # Only an unfiltered list knows the count (etcd counts keys, not matches).
                remaining = 1 + sum(1 for _ in entries)
            break
        found.append(entry)
        last = key
    token = _encode_continue(rv, last) if more and last is not None else ""
    return Page(found, rv, token, remaining)


@dataclass
class ExpiredContinue(errors.StatusError):
    """410 for a continue token older than the history, with a token to go on inconsistently."""

    token: str = ""

    def to_status(self) -> dict[str, Any]:
        status = super().to_status()
        status["metadata"] = {"continue": self.token}
        return status


def _encode_continue(rv: int, key: Key) -> str:
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(key)})
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_continue(token: str) -> tuple[int, Key]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode("ascii")))
        rv = int(data["rv"])
        start = data["start"]
        return rv, (str(start[0]), str(start[1]))
    except (binascii.Error, ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None


def present(res: Resource, obj: Obj) -> Obj:
    """The object as this resource's group/version shows it."""
    if res.store_key == "events" and res.group == "events.k8s.io":
        return converting.core_to_events_v1(obj)
    return obj


def entry_json(res: Resource, entry: Entry) -> bytes:
    if res.store_key == "events" and res.group == "events.k8s.io":
        return orjson.dumps(converting.core_to_events_v1(entry.obj))
    return entry.json


def list_body(res: Resource, page: Page) -> bytes:
    """The ``<Kind>List`` JSON, assembled from each entry's cached bytes."""
    return b"".join(list_chunks(res, page, size=1 << 62))


def list_chunks(res: Resource, page: Page, *, size: int = 1 << 20) -> Iterator[bytes]:
    """The list's JSON in pieces of about ``size`` bytes (large lists are streamed, so a
    150,000-pod list is never one 300 MB buffer)."""
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        meta["continue"] = page.continue_token
    if page.remaining is not None:
        meta["remainingItemCount"] = page.remaining
    head = orjson.dumps({"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta})
    parts: list[bytes] = [head[:-1], b',"items":[']
    pending = 0
    first = True
    for entry in page.entries:
        body = entry_json(res, entry)
        if not first:
            parts.append(b",")
        first = False
        parts.append(body)
        pending += len(body)
        if pending >= size:
            yield b"".join(parts)
            parts = []
            pending = 0
    parts.append(b"]}")
    yield b"".join(parts)


def watch_filter(res: Resource, query: Query) -> Callable[[Change], Iterator[tuple[str, Obj]]]:
    """Turn a store change into what a filtered watch sees.

    As the real watch cache does, an object that stops matching the selector is reported
    DELETED and one that starts matching is reported ADDED.
    """
    accepts = query.predicate(res)
    namespace = query.namespace

    def events(change: Change) -> Iterator[tuple[str, Obj]]:
        if (
            namespace is not None
            and (change.obj.get("metadata") or {}).get("namespace") != namespace
        ):
            return
        new_ok = accepts(change.obj)
        if change.type == "ADDED":
            if new_ok:
                yield "ADDED", change.obj
            return
        old_ok = change.old is not None and accepts(change.old)
        if change.type == "DELETED":
            if old_ok or new_ok:
                yield "DELETED", change.obj
            return
        if new_ok and old_ok:
            yield "MODIFIED", change.obj
        elif new_ok:
            yield "ADDED", change.obj
        elif old_ok and change.old is not None:
            # As the watch cache: the previous content (what the watcher last saw match), at
            # the change's resourceVersion.
            meta = {**(change.old.get("metadata") or {}), "resourceVersion": str(change.rv)}
            yield "DELETED", {**change.old, "metadata": meta}

    return events


def bookmark(res: Resource, rv: int, *, initial_events_end: bool = False) -> Obj:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
