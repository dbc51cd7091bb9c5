"""``kubemedic drift`` end to end: 2,000 objects against a 2,000-file repository.

    python bench/drift.py                       # 2,000 Deployments, 1 in 20 edited live
    python bench/drift.py --files 500 --no-baseline

Builds the repository of bench/git_read.py (``--files`` Deployment manifests in 20
namespaces, tag ``v1`` and a later ``main``), serves the API emulator (``kubemedic sim serve``,
its own process), applies the ``v1`` tree as Argo CD would (server-side apply, field manager
``argocd-controller``), then edits one object in 20 as a person would (``kubectl-edit`` adds a
``nodeName``; ``kubectl-patch`` changes an image). Measured, each in a fresh process:

* **kubemedic drift** ``--git REPO --revision v1 -o json``: the command as a user runs it
  (start-up, Git, discovery, 2,000 GETs, the two-way diff, the output); its exit status must be
  1 and it must find exactly the edited objects. Target: <= 10 s.
* **baseline**: ``kubectl diff --server-side -f DIR`` on the same files (a one-way diff by
  server-side dry runs, what an operator would reach for; it cannot see the added ``nodeName``
  as a person's, and needs the files checked out).

Printed: both wall times, the ratio, and what kubemedic found.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import git_read  # noqa: E402

TARGET = 10.0


def kubemedic(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from kubemedic.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--every", type=int, default=20, help="edit one object in this many")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("kubectl is needed (to apply the repository as Argo CD would)")
        return 2
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        repo = git_read.build(tmp, args.files)
        tree = tmp / "v1"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "-q", str(tree), "v1"], check=True
        )
        kc = tmp / "kubeconfig"
        server = subprocess.Popen(
            [sys.executable, "-c", "from kubemedic.cli import main; main()", "sim", "serve",
             "--kubeconfig-out", str(kc)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            for _ in range(300):
                if kc.exists() and kc.stat().st_size:
                    break
                time.sleep(0.1)
            k = [kubectl, "--kubeconfig", str(kc)]
            for team in range(20):
                subprocess.run([*k, "create", "namespace", f"team-{team}"], check=True,
                               capture_output=True)  # fmt: skip
            started = time.perf_counter()
            subprocess.run(
                [*k, "apply", "--server-side", "--field-manager=argocd-controller", "-R",
                 "-f", str(tree)],
                check=True, capture_output=True,
            )  # fmt: skip
            print(f"applied {args.files} objects in {time.perf_counter() - started:.1f} s")
            edited = []
            for index in range(0, args.files, args.every):
                obj = f"svc-{index:05d}"
                ns = f"team-{index % 20}"
                if index % (2 * args.every) == 0:
                    patch = '{"spec":{"template":{"spec":{"nodeName":"node-1"}}}}'
                    manager = "kubectl-edit"
                else:
                    patch = (
                        '{"spec":{"template":{"spec":{"containers":[{"name":"app",'
                        '"image":"registry.example.com/shop/hotfix:1"}]}}}}'
                    )
                    manager = "kubectl-patch"
                subprocess.run(
                    [*k, "patch", "deployment", obj, "-n", ns, "-p", patch,
                     f"--field-manager={manager}"],
                    check=True, capture_output=True,
                )  # fmt: skip
                edited.append(obj)
            started = time.perf_counter()
            done = kubemedic(
                "drift", "--git", str(repo), "--revision", "v1", "-o", "json",
                "--kubeconfig", str(kc),
            )  # fmt: skip
            ours = time.perf_counter() - started
            if done.returncode != 1:
                print(f"kubemedic drift exited {done.returncode}: {done.stderr.strip()[:300]}")
                return 1
            found = json.loads(done.stdout)
            names = sorted(d["object"]["name"] for d in found["drift"])
            right = names == sorted(edited)
            print(
                f"kubemedic drift: {found['compared']} objects compared, {len(names)} drifted "
                f"({'exactly the edited ones' if right else 'NOT the edited ones'}) in "
                f"{ours:.2f} s (target <= {TARGET:g} s)"
            )
            if not args.no_baseline:
                started = time.perf_counter()
                subprocess.run(
                    [*k, "diff", "--server-side", "--field-manager=argocd-controller", "-R",
                     "-f", str(tree)],
                    capture_output=True, check=False,
                )  # fmt: skip
                theirs = time.perf_counter() - started
                print(
                    f"baseline kubectl diff --server-side: {theirs:.2f} s; "
                    f"ratio kubemedic/baseline {ours / theirs:.2f}x"
                )
            return 0 if right and ours <= TARGET else 1
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
