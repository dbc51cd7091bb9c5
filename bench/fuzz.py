"""The long fuzz run: the strategies of tests/fuzz with a large budget.

    python bench/fuzz.py                          # 200 examples per input path, 20 min at most
    python bench/fuzz.py --examples 20 --seconds 120   # a quick look
    python bench/fuzz.py --only snapshot --only config

Each input path (snapshots by value type, by quantity, by bytes; configs; scenarios; flags; and
the catalogue of known bad inputs) is driven with hypothesis in chunks of fresh seeds until its
examples or its share of ``--seconds`` run out; every case is judged by the contract of
tests/fuzz/harness.py. It prints, per path, the inputs tried, the failures found by class and the
time, up to ``--show`` failing inputs of each class, and a summary line. Exit 0 when nothing
failed, 1 otherwise. The live, archive and output-target cases need servers and fixtures: they
run in the bounded suite (``pytest tests/fuzz``) only.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests.fuzz import documents, flags, snapshots  # noqa: E402
from tests.fuzz.harness import Case, run_case, startup_seconds, violations  # noqa: E402


@dataclass
class Tally:
    name: str
    tried: int = 0
    failed: int = 0
    seconds: float = 0.0
    classes: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def judge(self, case: Case) -> None:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kmfuzz-") as name:
            outcome = run_case(case, Path(name))
        problems = violations(outcome, valid=case.valid, names=case.names)
        self.tried += 1
        self.seconds += time.monotonic() - started
        if not problems:
            return
        self.failed += 1
        for kind in sorted({p.split(":", 1)[0] for p in problems}):
            self.classes[kind] += 1
            shown = self.examples.setdefault(kind, [])
            shown.append(f"{case.label[:100]} -> exit {outcome.code}: {problems[0][:160]}")


PATHS: dict[str, Callable[[], st.SearchStrategy[Case]]] = {
    "snapshot: wrong types": snapshots.wrong_types,
    "snapshot: bad quantities": snapshots.bad_quantities,
    "snapshot: bytes": snapshots.byte_mutations,
    "config": documents.config_cases,
    "scenario": documents.scenario_mutations,
    "flags": flags.flag_cases,
}
CATALOGUES: dict[str, Callable[[], list[Case]]] = {
    "catalogue: snapshots": snapshots.catalogue,
    "catalogue: configs": documents.config_catalogue,
    "catalogue: scenarios": documents.scenario_catalogue,
    "catalogue: flags": flags.flag_catalogue,
}


def drive(tally: Tally, strategy: st.SearchStrategy[Case], examples: int, until: float) -> None:
    """Run ``examples`` cases of ``strategy`` (in chunks of fresh seeds) or until ``until``."""
    chunk = 25
    for round_ in range(0, examples, chunk):
        if time.monotonic() >= until:
            return

        @seed(round_)
        @settings(
            max_examples=min(chunk, examples - round_),
            deadline=None,
            database=None,
            phases=(Phase.generate,),
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def one(case: Case) -> None:
            if time.monotonic() < until:
                tally.judge(case)

        one()


def report(tally: Tally, show: int) -> None:
    classes = ", ".join(f"{k}: {n}" for k, n in tally.classes.most_common()) or "none"
    print(
        f"{tally.name:<26} {tally.tried:>6} tried {tally.failed:>5} failed "
        f"({classes})  {tally.seconds:7.1f} s",
        flush=True,
    )
    for kind, shown in sorted(tally.examples.items()):
        for line in shown[:show]:
            print(f"    {kind}: {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per input path")
    parser.add_argument("--seconds", type=float, default=1200.0, help="time for the whole run")
    parser.add_argument("--show", type=int, default=2, help="failing inputs shown per class")
    parser.add_argument("--only", action="append", default=[], help="paths whose name has this")
    parser.add_argument("--no-catalogue", action="store_true", help="skip the known bad inputs")
    args = parser.parse_args()

    chosen = {n: s for n, s in PATHS.items() if not args.only or any(o in n for o in args.only)}
    catalogues = {} if args.no_catalogue else CATALOGUES
    catalogues = {
        n: c for n, c in catalogues.items() if not args.only or any(o in n for o in args.only)
    }
    print(f"kubemedic fuzz: {args.examples} examples per path, {args.seconds:.0f} s at most; "
          f"process start-up {startup_seconds():.2f} s", flush=True)  # fmt: skip
    started = time.monotonic()
    share = args.seconds / max(1, len(chosen) + len(catalogues))
    tallies = []
    for name, make in chosen.items():
        tally = Tally(name)
        drive(tally, make(), args.examples, min(time.monotonic() + share, started + args.seconds))
        report(tally, args.show)
        tallies.append(tally)
    for name, build in catalogues.items():
        tally = Tally(name)
        for case in build():  # each in its own process, at most 20 s
            if time.monotonic() < started + args.seconds:
                tally.judge(replace(case, inprocess=False, timeout=min(case.timeout, 20.0)))
        report(tally, args.show)
        tallies.append(tally)
    total = collections.Counter[str]()
    for tally in tallies:
        total.update(tally.classes)
    tried, failed = sum(t.tried for t in tallies), sum(t.failed for t in tallies)
    classes = ", ".join(f"{k}: {n}" for k, n in total.most_common()) or "none"
    print(f"summary: {tried} inputs tried, {failed} failures ({classes}) "
          f"in {time.monotonic() - started:.0f} s")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
