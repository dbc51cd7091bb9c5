"""Right-sizing one workload container from its usage history (pure: no I/O).

**The baseline is Robusta KRR's ``simple`` strategy** (github.com/robusta-dev/krr,
``robusta_krr/strategies/simple.py``, ``SimpleStrategySettings``: ``cpu_percentile=95``,
``memory_buffer_percentage=15``, ``points_required=100``; its description reads "CPU request:
95% percentile, limit: unset; Memory request: max + 15%, limit: max + 15%"):

* **CPU request** = the 95th percentile of each pod's CPU usage samples, the highest over the
  workload's pods (KRR asks Prometheus for ``quantile_over_time`` per pod and takes the maximum;
  the percentile interpolates linearly between the two nearest ranks, as Prometheus does).
  **No CPU limit**: a limit only throttles a container that could have used idle CPU.
* **Memory request = memory limit** = the highest working set sampled, plus 15 %. Request and
  limit are equal because memory cannot be throttled: a container above its request is the
  kubelet's first candidate for eviction under node memory pressure (it ranks pods by usage
  above request), and one above its limit is OOM-killed by the kernel.

**kubemedic's rule on top: never below a peak that ended in a kill.** A container that was
OOM-killed or whose pod the kubelet evicted for memory needed at least what it used then:

* an **eviction** (node-pressure, memory): the container's last sample before the eviction (at
  most ``Settings.floor_sample_age`` earlier) and, for the container the kubelet named in its
  message, the usage the message gives;
* an **OOM kill**: the last sample before the kill and the memory limit it had: the kernel kills
  a container that tries to use more than its limit, so it needed *more* than that limit.

Those peaks join the sampled maximum before the buffer is added, so the recommendation is at
least the peak plus 15 %: above the usage at the eviction, above the limit of the OOM kill.

**Not enough data.** Fewer than ``Settings.min_samples`` samples, or samples spanning less than
``Settings.min_span``, give no number for that resource (``None``, and a reason saying what
is missing), as KRR answers "Not enough data" below ``points_required``. The defaults are lower
than KRR's (100 points over at least 3 hours) because kubemedic samples metrics-server once a
minute and is asked about the hours around an incident; raise them for steady workloads.

Amounts are millicores (CPU) and bytes (memory). Recommended values are rounded up: CPU to a
whole millicore (at least 1m), memory to a whole MiB.
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from kubemedic.errors import InputError
from kubemedic.model import durations

__all__ = [
    "Change",
    "Kill",
    "KillKind",
    "Reason",
    "Recommendation",
    "Resources",
    "Settings",
    "SettingsError",
    "Usage",
    "Workload",
    "percentile",
    "recommend",
]

MIB: Final = 1024 * 1024


class SettingsError(InputError, ValueError):
    """A setting of the policy is out of range (a percentile above 100, a negative buffer)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The policy's knobs; the defaults are KRR's ``simple`` strategy's, except the minimum
    history (see the module docstring)."""

    cpu_percentile: float = 95.0
    memory_buffer: float = 0.15
    """Added to the memory peak: 0.15 is 15 %."""
    min_samples: int = 30
    min_span: timedelta = timedelta(minutes=30)
    floor_sample_age: timedelta = timedelta(minutes=10)
    """How old the last sample before a kill may be and still stand for the usage then
    (metrics-server scrapes every 15-60 s; the archive's OOM report uses the same age)."""

    def __post_init__(self) -> None:
        if not 0 < self.cpu_percentile <= 100:
            raise SettingsError(
                f"CPU percentile {self.cpu_percentile:g}: expected more than 0, at most 100"
            )
        if not 0 < self.memory_buffer <= 10:
            raise SettingsError(
                f"memory buffer {self.memory_buffer:.0%}: expected more than 0%, at most 1000%"
            )
        if self.min_samples < 1:
            raise SettingsError(f"minimum samples {self.min_samples}: expected 1 or more")
        if self.min_span < timedelta(0):
            raise SettingsError("minimum history span: expected 0s or more")


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload's container: ``namespace/Kind/name`` and the container's name."""

    namespace: str
    kind: str
    name: str
    container: str
    cluster: str = ""

    @property
    def key(self) -> str:
        """``namespace/Kind/name`` (``Kind/name`` without a namespace), as causes name it."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{where}{self.kind}/{self.name}"


@dataclass(frozen=True, slots=True)
class Usage:
    """One metrics.k8s.io sample of the container in one pod."""

    pod: str
    at: datetime
    cpu_millicores: float | None
    memory_bytes: int | None


class KillKind(enum.StrEnum):
    OOM_KILL = "oom-kill"
    EVICTION = "eviction"


@dataclass(frozen=True, slots=True)
class Kill:
    """An OOM kill of the container, or a memory eviction of its pod.

    ``limit`` is the container's memory limit at an OOM kill; ``usage`` the container's usage
    the kubelet's eviction message named (only when it named this container)."""

    kind: KillKind
    pod: str
    at: datetime | None
    limit: int | None = None
    usage: int | None = None


@dataclass(frozen=True, slots=True)
class Resources:
    """A container's requests and limits (millicores, bytes; None: not set or not known) and
    where they were read (``source``: ``snapshot``, or the archived row they came from)."""

    cpu_request: int | None = None
    cpu_limit: int | None = None
    memory_request: int | None = None
    memory_limit: int | None = None
    source: str = ""


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a value is what it is: ``rule`` (``cpu-percentile``, ``no-cpu-limit``,
    ``memory-peak``, ``oom-kill-floor``, ``eviction-floor``, ``not-enough-data``), the
    ``resource`` it is about, and a sentence naming the samples (or the kill) it came from."""

    rule: str
    resource: str
    text: str


@dataclass(frozen=True, slots=True)
class Change:
    """One of the four values: the current one, the recommended one, and the difference.
    ``recommended`` None with ``decided`` True means "leave unset" (the CPU limit); with
    ``decided`` False it means there was not enough data."""

    resource: str
    field: str
    current: int | None
    recommended: int | None
    decided: bool

    @property
    def delta(self) -> int | None:
        if self.current is None or self.recommended is None:
            return None
        return self.recommended - self.current

    @property
    def action(self) -> str:
        """``raise``, ``lower``, ``keep``, ``set`` (nothing set now), ``unset`` (remove what is
        set), ``none`` (leave unset), ``unknown`` (current not known) or ``no-data``."""
        if not self.decided:
            return "no-data"
        if self.recommended is None:
            return "unset" if self.current is not None else "none"
        if self.current is None:
            return "set"
        if self.recommended == self.current:
            return "keep"
        return "raise" if self.recommended > self.current else "lower"


@dataclass(frozen=True, slots=True)
class Recommendation:
    """Requests and limits for one workload container, with how they were reached."""

    workload: Workload
    cpu_request: int | None
    cpu_limit: int | None
    memory_request: int | None
    memory_limit: int | None
    cpu_enough: bool
    memory_enough: bool
    samples: int
    pods: int
    first: datetime | None
    last: datetime | None
    reasons: tuple[Reason, ...]
    current: Resources | None
    changes: tuple[Change, ...] = field(default=())

    @property
    def span(self) -> timedelta:
        if self.first is None or self.last is None:
            return timedelta(0)
        return self.last - self.first

    @property
    def enough(self) -> bool:
        """Whether both CPU and memory have a number."""
        return self.cpu_enough and self.memory_enough


# -- arithmetic -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, interpolating linearly between the two
    nearest ranks (rank ``q/100 * (n - 1)``: Prometheus's ``quantile_over_time``, numpy's
    default). Raises ``ValueError`` on no values."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _cpu_amount(millicores: float) -> int:
    return max(1, math.ceil(millicores - 1e-9))


def _memory_amount(amount: float) -> int:
    return max(1, math.ceil(amount / MIB - 1e-9)) * MIB


def _mib(amount: float) -> str:
    return f"{amount / MIB:.0f}Mi" if amount >= MIB else f"{amount:.0f}B"


def _time(when: datetime | None) -> str:
    if when is None:
        return "an unknown time"
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span_text(span: timedelta) -> str:
    return durations.short_duration(span)


# -- the rules --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Peak:
    amount: float
    rule: str
    text: str


def _history(samples: Sequence[Usage], attr: str) -> list[Usage]:
    return [s for s in samples if getattr(s, attr) is not None]


def _enough(found: Sequence[Usage], settings: Settings, resource: str) -> Reason | None:
    """None when ``found`` is enough history, else the reason it is not."""
    span = (max(s.at for s in found) - min(s.at for s in found)) if found else timedelta(0)
    if len(found) >= settings.min_samples and span >= settings.min_span:
        return None
    return Reason(
        "not-enough-data",
        resource,
        f"not enough data: {len(found)} {resource} sample(s) over {_span_text(span)}; at least "
        f"{settings.min_samples} over {_span_text(settings.min_span)} are needed",
    )


def _cpu(samples: Sequence[Usage], settings: Settings) -> tuple[int | None, list[Reason]]:
    found = _history(samples, "cpu_millicores")
    missing = _enough(found, settings, "cpu")
    if missing is not None:
        return None, [missing]
    by_pod: dict[str, list[float]] = defaultdict(list)
    for sample in found:
        assert sample.cpu_millicores is not None
        by_pod[sample.pod].append(sample.cpu_millicores)
    pod, value = max(
        ((pod, percentile(values, settings.cpu_percentile)) for pod, values in by_pod.items()),
        key=lambda item: (item[1], item[0]),
    )
    amount = _cpu_amount(value)
    q = f"{settings.cpu_percentile:g}"
    return amount, [
        Reason(
            "cpu-percentile",
            "cpu",
            f"CPU request {amount}m: p{q} of each pod's CPU usage, highest in pod {pod} "
            f"({value:.1f}m; {len(by_pod[pod])} of {len(found)} samples, {len(by_pod)} pod(s))",
        ),
        Reason("no-cpu-limit", "cpu", "no CPU limit: a limit throttles, it protects nothing"),
    ]


def _last_before(samples: Sequence[Usage], kill: Kill, settings: Settings) -> Usage | None:
    if kill.at is None:
        return None
    earliest = kill.at - settings.floor_sample_age
    found = [
        s
        for s in samples
        if s.pod == kill.pod and s.memory_bytes is not None and earliest <= s.at <= kill.at
    ]
    return max(found, key=lambda s: s.at) if found else None


def _kill_peaks(samples: Sequence[Usage], kills: Iterable[Kill], settings: Settings) -> list[_Peak]:
    peaks: list[_Peak] = []
    for kill in kills:
        what = "OOM kill" if kill.kind is KillKind.OOM_KILL else "eviction"
        rule = "oom-kill-floor" if kill.kind is KillKind.OOM_KILL else "eviction-floor"
        where = f"{what} of pod {kill.pod} at {_time(kill.at)}"
        last = _last_before(samples, kill, settings)
        if last is not None and last.memory_bytes is not None:
            peaks.append(
                _Peak(
                    float(last.memory_bytes),
                    rule,
                    f"{_mib(last.memory_bytes)} at the last sample before the {where} "
                    f"({_time(last.at)})",
                )
            )
        if kill.kind is KillKind.EVICTION and kill.usage is not None:
            peaks.append(
                _Peak(
                    float(kill.usage),
                    rule,
                    f"{_mib(kill.usage)} named by the kubelet's message at the {where}",
                )
            )
        if kill.kind is KillKind.OOM_KILL and kill.limit is not None:
            peaks.append(
                _Peak(
                    float(kill.limit),
                    rule,
                    f"more than the {_mib(kill.limit)} limit, exceeded at the {where}",
                )
            )
    return peaks


def _memory(
    samples: Sequence[Usage], kills: Sequence[Kill], settings: Settings
) -> tuple[int | None, list[Reason]]:
    found = _history(samples, "memory_bytes")
    peaks = _kill_peaks(samples, kills, settings)
    missing = _enough(found, settings, "memory")
    buffer = f"{settings.memory_buffer:.0%}"
    if missing is not None:
        if not peaks:
            return None, [missing]
        top_kill = max(peaks, key=lambda p: p.amount)
        more = f" ({len(peaks) - 1} more kill peak(s), none higher)" if len(peaks) > 1 else ""
        hint = f"at least {_mib(top_kill.amount)} plus {buffer} once there is enough data: "
        return None, [missing, Reason(top_kill.rule, "memory", hint + top_kill.text + more)]
    top = max(found, key=lambda s: (s.memory_bytes or 0, -s.at.timestamp()))
    assert top.memory_bytes is not None
    sampled = _Peak(
        float(top.memory_bytes),
        "memory-peak",
        f"{_mib(top.memory_bytes)} in pod {top.pod} at {_time(top.at)}, the highest of "
        f"{len(found)} samples",
    )
    # On a tie the kill names the peak: it says why the peak matters.
    highest = max([*peaks, sampled], key=lambda p: p.amount)
    amount = _memory_amount(highest.amount * (1 + settings.memory_buffer))
    reasons = [
        Reason(
            highest.rule,
            "memory",
            f"memory request = limit = {_mib(amount)}: {highest.text}, plus {buffer}",
        )
    ]
    if sampled is not highest:
        reasons.append(Reason(sampled.rule, "memory", f"also considered: {sampled.text}"))
    others = sorted((p for p in peaks if p is not highest), key=lambda p: -p.amount)
    if others:
        more = f" and {len(others) - 1} more, none higher" if len(others) > 1 else ""
        reasons.append(Reason(others[0].rule, "memory", f"also considered: {others[0].text}{more}"))
    return amount, reasons


def _changes(
    current: Resources | None,
    values: tuple[int | None, int | None, int | None, int | None],
    *,
    cpu_enough: bool,
    memory_enough: bool,
) -> tuple[Change, ...]:
    now = current or Resources()
    cpu_request, cpu_limit, memory_request, memory_limit = values
    return (
        Change("cpu", "request", now.cpu_request, cpu_request, cpu_enough),
        Change("cpu", "limit", now.cpu_limit, cpu_limit, cpu_enough),
        Change("memory", "request", now.memory_request, memory_request, memory_enough),
        Change("memory", "limit", now.memory_limit, memory_limit, memory_enough),
    )


def recommend(
    workload: Workload,
    samples: Sequence[Usage],
    *,
    kills: Sequence[Kill] = (),
    current: Resources | None = None,
    settings: Settings | None = None,
) -> Recommendation:
    """The requests and limits ``workload``'s container should have, from ``samples`` (of
    every pod of the workload) and the ``kills`` it suffered; ``current`` is what it has now,
    as far as known."""
    settings = settings or Settings()
    cpu, cpu_reasons = _cpu(samples, settings)
    memory, memory_reasons = _memory(samples, kills, settings)
    cpu_enough, memory_enough = cpu is not None, memory is not None
    values = (cpu, None, memory, memory)
    return Recommendation(
        workload=workload,
        cpu_request=cpu,
        cpu_limit=None,
        memory_request=memory,
        memory_limit=memory,
        cpu_enough=cpu_enough,
        memory_enough=memory_enough,
        samples=len(samples),
        pods=len({s.pod for s in samples}),
        first=min((s.at for s in samples), default=None),
        last=max((s.at for s in samples), default=None),
        reasons=(*cpu_reasons, *memory_reasons),
        current=current,
        changes=_changes(current, values, cpu_enough=cpu_enough, memory_enough=memory_enough),
    )
