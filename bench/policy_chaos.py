"""Chaos for the repair policy: many seeds of random 500-node clusters, many rounds each.

    python bench/policy_chaos.py                       # 300 seeds, 500 nodes, 30 rounds
    python bench/policy_chaos.py --seeds 20 --rounds 10   # a quick look
    python bench/policy_chaos.py --first-seed 1000 --nodes 200

Each seed builds a cluster (tests/repair/policy/chaos.py: pools, zones, Ready statuses and
times, agent heartbeats, quarantine labels, opt-out annotations, Cluster API Machines, repairs
in flight, a ledger, settings anywhere in their valid ranges, dry run or not) and plays rounds:
``decide``, check every rule of docs/repair.md (tests/repair/policy/invariants.py), carry out the
acts (each failing at random), let faults happen (single nodes, bursts in a zone or across the
cluster, recoveries, releases, opt-outs) and move the clock by the plan's ``wake_at`` or a
random tick. It prints the seeds, rounds, decisions, the rule violations (there must be none;
the first few are shown with their seed) and the policy's time per round. Time is printed,
never judged. Exit 0 when no rule was broken, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.repair.policy import chaos  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--show", type=int, default=10, help="violations to print")
    args = parser.parse_args(argv)

    started = time.monotonic()
    rounds = decisions = acts = 0
    seconds: list[float] = []
    broken: list[str] = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        run = chaos.chaos(random.Random(seed), nodes=args.nodes, rounds=args.rounds)
        rounds += run.rounds
        decisions += run.decisions
        acts += run.acts
        seconds.extend(run.seconds)
        broken.extend(f"seed {seed}, {v}" for v in run.violations)

    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))] if ms else 0.0
    print(
        f"seeds                {args.seeds} ({args.first_seed}..{args.first_seed + args.seeds - 1})"
    )
    print(f"nodes per cluster    {args.nodes}")
    print(f"rounds               {rounds}")
    print(f"decisions            {decisions} ({acts} acts)")
    print(f"invariant violations {len(broken)}")
    for line in broken[: args.show]:
        print(f"  {line}")
    if ms:
        print(
            f"policy per round     median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, "
            f"max {ms[-1]:.1f} ms ({args.nodes} nodes)"
        )
    print(f"wall time            {time.monotonic() - started:.1f} s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
