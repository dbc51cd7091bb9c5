"""Scan benchmark: a large synthetic snapshot, scanned, against ``orjson.loads`` of the same files.

    python bench/scan.py [--nodes 5000 --pods 150000 --events 100000] [--out DIR --keep]
    python bench/scan.py --whole-process [--nodes 1000 --pods 30000 --events 20000]

Targets (2-core machine): scan time <= 3x the baseline (reading the files and ``orjson.loads``
of each, nothing else), peak RSS of the scan <= 2 GB. Each phase runs in its own fresh
subprocess, three times; the median time and the peak RSS (``ru_maxrss`` of that child) are
reported, with the scan's breakdown (parse, validate, view, every check, render) so that a
regression points at its phase. Exit status: 0 when both targets pass, 1 otherwise.

``--whole-process`` measures what a user waits for instead, on a mid-size snapshot by default:
the wall time of the whole ``kubemedic scan --snapshot DIR`` process (interpreter start-up,
imports, the scan, writing the output, exit), as JSON and as the table, against the whole
process ``python -c 'import orjson; ...'`` reading and parsing the same files. Target: <= 3x.

The snapshot itself is built by ``bench/synthetic.py`` (deterministic for a given seed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TIME_FACTOR = 3.0
RSS_LIMIT_MB = 2048.0
SKIPPED = ("__init__", "findings", "registry")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _import_checks() -> dict[str, str]:
    """Import every module in ``kubemedic/checks`` (registration happens on import) so the bench
    measures all checks present, wired into ``checks/__init__.py`` or not yet."""
    problems: dict[str, str] = {}
    directory = SRC / "kubemedic" / "checks"
    for file in sorted(directory.glob("*.py")):
        if file.stem in SKIPPED or file.stem.startswith("_"):
            continue
        try:
            importlib.import_module(f"kubemedic.checks.{file.stem}")
        except Exception as error:  # a module still being written must not stop the bench
            problems[file.stem] = f"{type(error).__name__}: {error}"
    return problems


# -- children -------------------------------------------------------------------------------


def child_baseline(directory: Path) -> dict[str, Any]:
    import orjson

    files = sorted(p for p in directory.iterdir() if p.suffix == ".json")
    start = time.perf_counter()
    objects = 0
    for file in files:
        document = orjson.loads(file.read_bytes())
        objects += len(document.get("items", ()))
        del document
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rss_mb": _peak_rss_mb(), "objects": objects}


def child_scan(directory: Path) -> dict[str, Any]:
    import kubemedic.checks  # noqa: F401  (registers what __init__ imports)
    from kubemedic.checks import registry
    from kubemedic.model import objects
    from kubemedic.output import rendering
    from kubemedic.snapshot import loading

    import_problems = _import_checks()
    phases: dict[str, float] = {}
    start = time.perf_counter()

    mark = time.perf_counter()
    loaded = loading.load_snapshot(directory, validate=False)
    phases["load+parse"] = time.perf_counter() - mark

    mark = time.perf_counter()
    with objects.gc_paused() as pause:  # as load_snapshot(validate=True) runs it
        ends = [first for first, _ in loaded.spans[1:]] + [len(loaded.bodies)]
        for (first, file), end in zip(loaded.spans, ends, strict=True):
            for index in range(first, end):
                loading._validate(loaded.bodies[index], file=file)
        pause.freeze = len(loaded.bodies) >= loading.FREEZE_OBJECTS
    phases["validate"] = time.perf_counter() - mark

    mark = time.perf_counter()
    view = loaded.view()
    phases["build view"] = time.perf_counter() - mark

    findings: list[Any] = []
    check_counts: dict[str, int] = {}
    check_errors: dict[str, str] = {}
    for name in sorted(registry.REGISTRY):
        mark = time.perf_counter()
        try:
            found = registry.run_checks(view, names=[name])
        except Exception as error:  # report a crashing check, keep measuring the others
            found = []
            check_errors[name] = f"{type(error).__name__}: {error}"
        phases[f"check {name}"] = time.perf_counter() - mark
        check_counts[name] = len(found)
        findings.extend(found)
    findings.sort(key=lambda finding: finding.sort_key)

    mark = time.perf_counter()
    document = rendering.render_json(findings)
    phases["render json"] = time.perf_counter() - mark

    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "rss_mb": _peak_rss_mb(),
        "phases": phases,
        "objects": len(loaded.bodies),
        "findings": len(findings),
        "summary": rendering.summary_of(findings),
        "by_check": check_counts,
        "check_errors": check_errors,
        "import_problems": import_problems,
        "output_bytes": len(document),
    }


def _run_child(phase: str, directory: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", phase, str(directory)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{phase} child failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- whole processes --------------------------------------------------------------------------

_BASELINE_PROCESS = """
import sys
from pathlib import Path

import orjson

for file in sorted(Path(sys.argv[1]).iterdir()):
    if file.suffix == ".json":
        document = orjson.loads(file.read_bytes())
        del document
"""


def _wall(command: list[str], *, prints: bool) -> float:
    """Wall time of ``command``; what it prints goes to a file (as a redirect would)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.PIPE, check=False)
        seconds = time.perf_counter() - start
        printed = out.tell()
    # 1: the scan found something at --fail-on; anything else, or no output, is a failure.
    if done.returncode not in (0, 1) or done.stderr or (prints and not printed):
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr!r}")
    return seconds


def whole_process(directory: Path, runs: int) -> bool:
    # What the installed `kubemedic` entry point runs.
    kubemedic = [sys.executable, "-c", "from kubemedic.cli import main; main()"]
    commands = {
        "baseline (python -c orjson.loads)": [
            sys.executable,
            "-c",
            _BASELINE_PROCESS,
            str(directory),
        ],
        "kubemedic scan -o json": [*kubemedic, "scan", "--snapshot", str(directory), "-o", "json"],
        "kubemedic scan (table)": [*kubemedic, "scan", "--snapshot", str(directory)],
        "kubemedic --version": [*kubemedic, "--version"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for index in range(runs):
        for name, command in commands.items():
            times[name].append(_wall(command, prints=name.startswith("kubemedic")))
        shown = ", ".join(f"{name} {seconds[-1]:.2f} s" for name, seconds in times.items())
        print(f"  run {index + 1}: {shown}", flush=True)
    medians = {name: statistics.median(seconds) for name, seconds in times.items()}
    base = medians["baseline (python -c orjson.loads)"]
    print("\nwhole processes, wall time (median of each):")
    ok = True
    for name, seconds in medians.items():
        runs_text = ", ".join(f"{value:.2f}" for value in times[name])
        line = f"  {name:<36} {seconds:7.2f} s   runs: {runs_text}"
        if name.startswith("kubemedic scan"):
            ratio = seconds / base
            passed = ratio <= TIME_FACTOR
            ok = ok and passed
            line += f"   ratio {ratio:.2f}x (target <= {TIME_FACTOR:g}x) {('FAIL', 'PASS')[passed]}"
        print(line)
    return ok


# -- the parent -----------------------------------------------------------------------------


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(runs, key=lambda run: run["seconds"])
    return ordered[len(ordered) // 2]


def _report(baseline: list[dict[str, Any]], scan: list[dict[str, Any]]) -> bool:
    base_s = statistics.median(run["seconds"] for run in baseline)
    scan_s = statistics.median(run["seconds"] for run in scan)
    ratio = scan_s / base_s
    rss = max(run["rss_mb"] for run in scan)
    middle = _median_run(scan)
    time_ok = ratio <= TIME_FACTOR
    rss_ok = rss <= RSS_LIMIT_MB
    runs = ", ".join(f"{run['seconds']:.2f}" for run in scan)
    base_rss = max(run["rss_mb"] for run in baseline)
    print(f"\nbaseline (read + orjson.loads): {base_s:7.2f} s   peak RSS {base_rss:.0f} MB")
    print(f"scan (load..render json):       {scan_s:7.2f} s   peak RSS {rss:.0f} MB   runs: {runs}")
    print(
        f"ratio scan/baseline:            {ratio:7.2f}x  (target <= {TIME_FACTOR:g}x)  "
        f"{'PASS' if time_ok else 'FAIL'}"
    )
    print(
        f"peak RSS:                       {rss:7.0f} MB (target <= {RSS_LIMIT_MB:.0f} MB)  "
        f"{'PASS' if rss_ok else 'FAIL'}"
    )
    print(f"\nbreakdown of the median scan run ({middle['seconds']:.2f} s):")
    for name, seconds in middle["phases"].items():
        share = 100 * seconds / middle["seconds"]
        found = middle["by_check"].get(name.removeprefix("check "), "")
        suffix = f"   {found} findings" if name.startswith("check ") else ""
        print(f"  {name:<40} {seconds:7.3f} s  {share:5.1f}%{suffix}")
    print(
        f"\n{middle['objects']} objects kept; {middle['findings']} findings {middle['summary']};"
        f" JSON output {middle['output_bytes'] / 1e6:.1f} MB"
    )
    for name, error in {**middle["import_problems"], **middle["check_errors"]}.items():
        print(f"  NOT MEASURED {name}: {error}")
    return time_ok and rss_ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, help="default 5,000 (--whole-process: 1,000)")
    parser.add_argument("--pods", type=int, help="default 150,000 (--whole-process: 30,000)")
    parser.add_argument("--events", type=int, help="default 100,000 (--whole-process: 20,000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, help="where to write the snapshot (default: temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the snapshot afterwards")
    parser.add_argument(
        "--heavy",
        action="store_true",
        help="add the bulky pod fields no check reads (volumes, env, ports)",
    )
    parser.add_argument("--reuse", action="store_true", help="scan --out as it is, no generation")
    parser.add_argument(
        "--whole-process",
        action="store_true",
        help="time whole `kubemedic scan` processes against whole orjson processes",
    )
    parser.add_argument("--child", nargs=2, metavar=("PHASE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        phase, directory = args.child
        function = child_baseline if phase == "baseline" else child_scan
        print(json.dumps(function(Path(directory))))
        return 0

    sizes_of = (1000, 30_000, 20_000) if args.whole_process else (5000, 150_000, 100_000)
    args.nodes = args.nodes if args.nodes is not None else sizes_of[0]
    args.pods = args.pods if args.pods is not None else sizes_of[1]
    args.events = args.events if args.events is not None else sizes_of[2]
    sys.path[:0] = [str(SRC), str(HERE)]
    import synthetic

    directory = args.out or Path(tempfile.mkdtemp(prefix="kubemedic-bench-"))
    try:
        if not args.reuse:
            mark = time.perf_counter()
            sizes = synthetic.write_snapshot(
                directory,
                nodes=args.nodes,
                pods=args.pods,
                events=args.events,
                seed=args.seed,
                heavy=args.heavy,
            )
            total = sum(sizes.values())
            print(
                f"generated {directory} in {time.perf_counter() - mark:.1f} s: "
                f"{total / 1e6:.0f} MB in {len(sizes)} files"
            )
            for name, size in sizes.items():
                print(f"  {name:<22} {size / 1e6:8.1f} MB")
        print(
            f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
            f"{args.runs} runs per phase, each in a fresh process"
        )
        if args.whole_process:
            return 0 if whole_process(directory, args.runs) else 1
        baseline, scan = [], []
        for index in range(args.runs):
            baseline.append(_run_child("baseline", directory))
            scan.append(_run_child("scan", directory))
            print(
                f"  run {index + 1}: baseline {baseline[-1]['seconds']:.2f} s, "
                f"scan {scan[-1]['seconds']:.2f} s",
                flush=True,
            )
        return 0 if _report(baseline, scan) else 1
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
