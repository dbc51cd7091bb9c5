"""The scheduler's ``FailedScheduling`` message, read back into numbers.

kube-scheduler reports why a pod fits nowhere as the text of a ``FitError``
(``pkg/scheduler/framework/types.go``, ``FitError.Error()``), put verbatim in the pod's
``FailedScheduling`` event and its ``PodScheduled=False`` condition::

    0/<N> nodes are available: <body>.[ <postfilter>]

* ``<body>`` is either the PreFilter message (a plugin rejected the pod before looking at any
  node: ``pod has unbound immediate PersistentVolumeClaims``) or the *reasons histogram*: every
  node's filter reasons counted, each formatted ``"<count> <reason>"``, the list sorted **as
  strings** (``sort.Strings``: ``"14 …" < "23 …" < "6 …" < "96 …"``) and joined with ``", "``.
* ``<postfilter>`` is what a PostFilter plugin said; DefaultPreemption writes ``preemption: `` and
  a second FitError text about the nodes where evicting lower-priority pods was tried, e.g.
  ``preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling.``, or why
  the pod may not preempt (``preemption: not eligible due to preemptionPolicy=Never.``).
* Some older schedulers used ``" %v."`` for the postfix too (it then ends in ``..``), and old
  ones worded the taint reason ``node(s) had taint {k: v}, that the pod didn't tolerate``, with
  a comma *outside* the braces; both are read.
* The scheduler cuts messages longer than an event note may be (1024 bytes) and ends them with
  ``" ..."``; kubemedic's own event store cuts at 4 KiB with ``"…"``. A cut message parses to what
  could be read, with ``partial`` set; the cut last item is dropped rather than misread.

Reasons are split on ``", "`` only outside ``{}``, ``()``, ``[]`` and double quotes, and an item
that does not start with a count is glued back to the one before it, so taints
(``{node.kubernetes.io/not-ready: }``), parenthesised notes (``(missing required label)``) and
quoted names (``persistentvolumeclaim "data" not found``) stay whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SchedulingFailure",
    "dominant_class",
    "format_failed_scheduling",
    "parse_failed_scheduling",
    "reason_class",
]

MAX_INPUT = 65536
"""Characters of a message that are read at all; anything longer is cut (and ``partial``)."""

NO_NODES_MESSAGE = "no nodes available to schedule pods"
"""``ErrNoNodesAvailable``: the cluster has no node at all (parsed as ``0/0``)."""

_HEADER = re.compile(r"0/(\d{1,9}) nodes are available(?::|\s*$)")
_ITEM = re.compile(r"(\d{1,9}) (\S.*)", re.DOTALL)
_PREFILTER_THEN_HISTOGRAM = re.compile(r"\. (?=\d{1,9} \S)")
_POSTFIX = " preemption: "
_CUT_MARKS = (" ...", "…")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}", ")", "]"}


@dataclass(frozen=True, slots=True)
class SchedulingFailure:
    """One FitError message, read. ``reasons`` maps each filter reason to its node count.

    Compared by value; not hashable (``reasons`` is a dict)."""

    nodes_total: int
    reasons: Mapping[str, int] = field(default_factory=dict)
    prefilter: str | None = None
    """The PreFilter message when the pod was rejected before any node was looked at."""
    preemption: SchedulingFailure | None = None
    """The preemption attempt's own FitError (``preemption: 0/N nodes are available: …``)."""
    postfilter: str | None = None
    """The whole PostFilter text as written (``preemption: not eligible due to …``)."""
    partial: bool = False
    """The message was cut or had items that could not be read; counts may be incomplete."""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"nodesTotal": self.nodes_total, "reasons": dict(self.reasons)}
        if self.prefilter is not None:
            body["prefilter"] = self.prefilter
        if self.partial:
            body["partial"] = True
        return body


def format_failed_scheduling(
    nodes_total: int,
    reasons: Mapping[str, int],
    *,
    prefilter: str | None = None,
    postfilter: str | None = None,
) -> str:
    """The message current kube-scheduler writes for these numbers, byte for byte.

    ``sorted`` on Python strings orders by code point, which is the byte order of UTF-8 that Go's
    ``sort.Strings`` uses, so the histogram comes out in the scheduler's order.
    """
    message = f"0/{nodes_total} nodes are available:"
    if prefilter:
        message += f" {prefilter}."
    else:
        items = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if items:
            message += " " + ", ".join(items) + "."
    if postfilter:
        message += f" {postfilter}"
    return message


def parse_failed_scheduling(message: object) -> SchedulingFailure | None:
    """Read a FitError message; None when ``message`` is not one. Never raises."""
    if not isinstance(message, str):
        return None
    partial = False
    text = message.strip()
    if len(text) > MAX_INPUT:
        text, partial = text[:MAX_INPUT], True
    if text.rstrip(".") == NO_NODES_MESSAGE:
        return SchedulingFailure(nodes_total=0)
    for mark in _CUT_MARKS:
        if text.endswith(mark):
            text, partial = text[: -len(mark)].rstrip(), True
    return _parse(text, partial=partial, nested=False)


def _parse(text: str, *, partial: bool, nested: bool) -> SchedulingFailure | None:
    header = _HEADER.match(text)
    if header is None:
        return None
    nodes_total = int(header.group(1))
    rest = text[header.end() :]

    postfilter: str | None = None
    preemption: SchedulingFailure | None = None
    cut = -1 if nested else rest.find(_POSTFIX)
    if cut >= 0:
        postfilter = rest[cut + 1 :].strip()
        rest = rest[:cut]
        if postfilter.endswith(".."):
            postfilter = postfilter[:-1]  # pre-1.27 " %v." after a message ending in "."
        inner = postfilter[len(_POSTFIX.strip()) :].strip()
        preemption = _parse(inner, partial=partial, nested=True)
    body = rest.strip()
    body = body.removesuffix(".").rstrip()
    # A cut postfix leaves the main body whole; a cut body has no postfix after it.
    body_partial = partial and postfilter is None

    prefilter: str | None = None
    histogram = body
    if body and _ITEM.match(body) is None:
        split = _PREFILTER_THEN_HISTOGRAM.search(body)
        if split is None:
            prefilter, histogram = body, ""
        else:
            prefilter, histogram = body[: split.start()], body[split.end() :]
    reasons, unread = _read_histogram(histogram, partial=body_partial)
    return SchedulingFailure(
        nodes_total=nodes_total,
        reasons=reasons,
        prefilter=prefilter or None,
        preemption=preemption,
        postfilter=postfilter or None,
        partial=partial or unread,
    )


def _read_histogram(text: str, *, partial: bool) -> tuple[dict[str, int], bool]:
    """``{reason: count}`` and whether some item could not be read."""
    items: list[str] = []
    for piece in _split_top_level(text):
        if items and _ITEM.fullmatch(piece) is None:
            items[-1] += ", " + piece  # "had taint {k: v}, that the pod didn't tolerate"
        else:
            items.append(piece)
    if partial and items:
        items.pop()  # cut mid-item: its reason text is not the scheduler's
    reasons: dict[str, int] = {}
    unread = False
    for item in items:
        matched = _ITEM.fullmatch(item)
        if matched is None:
            unread = True
            continue
        reason = matched.group(2).strip()
        reasons[reason] = reasons.get(reason, 0) + int(matched.group(1))
    return reasons, unread


def _split_top_level(text: str) -> list[str]:
    """Split on ``", "`` outside brackets and double quotes (unbalanced input: no split)."""
    if not text:
        return []
    pieces: list[str] = []
    stack: list[str] = []
    quoted = False
    start = 0
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            quoted = not quoted
        elif not quoted and char in _OPEN:
            stack.append(_OPEN[char])
        elif not quoted and char in _CLOSE:
            if stack and stack[-1] == char:
                stack.pop()
        elif char == "," and not quoted and not stack and text.startswith(", ", index):
            pieces.append(text[start:index])
            start = index + 2
            index += 2
            continue
        index += 1
    pieces.append(text[start:])
    return [piece for piece in pieces if piece]


# -- classes of reasons ------------------------------------------------------------------------

_TAINT = re.compile(r"had (?:untolerated )?taint \{([^:}]*)")
_RULES: tuple[tuple[str, str], ...] = (
    ("too many pods", "too-many-pods"),
    ("had taints that the pod didn't tolerate", "taint"),
    ("node affinity/selector", "node-affinity"),
    ("scheduler-enforced node affinity", "node-affinity"),
    ("volume node affinity conflict", "volume"),
    ("anti-affinity", "pod-anti-affinity"),
    ("pod affinity", "pod-affinity"),
    ("topology spread", "topology-spread"),
    ("persistent volume", "volume"),
    ("persistentvolumeclaim", "volume"),
    ("volume zone", "volume"),
    ("volume count", "volume"),
    ("free storage", "volume"),
    ("available disk", "volume"),
    ("pvc", "volume"),
    ("readwriteoncepod", "volume"),
    ("were unschedulable", "node-unschedulable"),
    ("unknown conditions", "node-conditions"),
    ("free ports", "host-ports"),
    ("requested node name", "node-name"),
    ("requested hostname", "node-name"),
    ("preemption is not helpful", "preemption-not-helpful"),
    ("no preemption victims", "no-preemption-victims"),
    ("resourceclaim", "dra"),
    ("claims", "dra"),
    ("device", "dra"),
)


def reason_class(reason: str) -> str:
    """A stable class for one scheduler reason (for cause fingerprints and grouping).

    ``Insufficient <resource>`` -> ``insufficient-<resource>``; a taint -> ``taint:<key>``;
    affinity, spread, volume, cordon, port and node-name reasons -> one class each; anything
    else -> ``other``.
    """
    text = reason.strip()
    if text.startswith("Insufficient "):
        return "insufficient-" + (text[len("Insufficient ") :].strip() or "resource")
    taint = _TAINT.search(text)
    if taint is not None:
        return "taint:" + (taint.group(1).strip() or "_")
    lowered = text.lower()
    for needle, name in _RULES:
        if needle in lowered:
            return name
    return "other"


def dominant_class(failure: SchedulingFailure) -> str:
    """The reason class that rules out the most nodes (ties: alphabetical).

    Without a histogram: the PreFilter message's class, ``no-nodes`` for an empty cluster, else
    ``unknown``.
    """
    totals: dict[str, int] = {}
    for reason, count in failure.reasons.items():
        name = reason_class(reason)
        totals[name] = totals.get(name, 0) + count
    if totals:
        return min(totals.items(), key=lambda item: (-item[1], item[0]))[0]
    if failure.prefilter:
        return reason_class(failure.prefilter)
    if failure.nodes_total == 0:
        return "no-nodes"
    return "unknown"
