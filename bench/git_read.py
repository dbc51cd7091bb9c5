"""Reading a desired state from Git: pygit2 against dulwich, and kubemedic's own ``load``.

    python bench/git_read.py                    # 2,000 files, 3 runs each
    python bench/git_read.py --files 200 --runs 1

Builds a repository with the ``git`` CLI (``git fast-import``): ``--files`` Deployment
manifests (about 60 lines each, as ``kubectl create deployment -o yaml`` plus resources, probes
and env) in 20 directories, a first commit tagged ``v1`` and a second commit on ``main`` that
changes a tenth of them (so the revision read is not the tip). Then, each in a fresh process,
median of ``--runs``:

* *parse only*: the same blobs' text parsed by ``kubemedic.model.documents`` (the floor: no Git);
* *pygit2* and *dulwich*: open the repository, resolve ``v1`` to its commit, walk the commit's
  tree, read every blob, and parse every file (a library's own cost is this minus *parse only*);
* *kubemedic load*: ``kubemedic.drift.sources.load`` on the same revision (walk, parse, origins,
  duplicate check): what ``kubemedic drift`` pays for its desired state.

The issue's target is a drift of 2,000 objects against a 2,000-file repository in <= 10 s; the
exit status is 1 when *kubemedic load* alone takes more than half of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

TEMPLATE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: team-{team}
  labels:
    app.kubernetes.io/name: {name}
    app.kubernetes.io/part-of: shop
spec:
  replicas: {replicas}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      app.kubernetes.io/name: {name}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {name}
    spec:
      serviceAccountName: {name}
      containers:
        - name: app
          image: registry.example.com/shop/{name}:{version}
          args: ["--port=8080", "--log-level=info"]
          ports:
            - name: http
              containerPort: 8080
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {name}-db
                  key: url
            - name: FEATURE_FLAGS
              value: "checkout,search"
          resources:
            requests:
              cpu: 100m
              memory: 256Mi
            limits:
              memory: 512Mi
          readinessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            initialDelaySeconds: 10
"""


def manifest(index: int, version: str) -> bytes:
    name = f"svc-{index:05d}"
    return TEMPLATE.format(
        name=name, team=index % 20, replicas=1 + index % 3, version=version
    ).encode()


def build(root: Path, files: int) -> Path:
    """A repository of ``files`` manifests, ``v1`` on the first commit, ``main`` one later."""
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream: list[bytes] = []

    def commit(message: str, version: str, indexes: range | list[int], mark: int) -> None:
        stream.append(b"commit refs/heads/main\n")
        stream.append(f"mark :{mark}\n".encode())
        stream.append(b"committer Bench <bench@example.com> 1700000000 +0000\n")
        stream.append(f"data {len(message)}\n{message}\n".encode())
        if mark > 1:
            stream.append(f"from :{mark - 1}\n".encode())
        for index in indexes:
            data = manifest(index, version)
            path = f"apps/team-{index % 20:02d}/svc-{index:05d}.yaml"
            stream.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")

    commit("first", "1.0.0", range(files), 1)
    stream.append(b"reset refs/tags/v1\nfrom :1\n\n")
    commit("second", "1.1.0", list(range(0, files, 10)), 2)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(stream), check=True)
    return repo


def phase_parse(repo: str) -> dict[str, float]:
    from kubemedic.model import documents

    texts = [
        manifest(i, "1.0.0").decode()
        for i in range(
            int(
                subprocess.check_output(
                    ["git", "-C", repo, "ls-tree", "-r", "--name-only", "v1"]
                ).count(b"\n")
            )
        )
    ]
    start = time.perf_counter()
    count = sum(len(documents.load_yaml_all(text, where="bench")) for text in texts)
    return {"seconds": time.perf_counter() - start, "objects": count}


def phase_pygit2(repo: str) -> dict[str, float]:
    import pygit2

    from kubemedic.model import documents

    start = time.perf_counter()
    git = pygit2.Repository(repo)
    commit = git.revparse_single("refs/tags/v1").peel(pygit2.Commit)
    stack = [("", commit.tree)]
    blobs: list[tuple[str, bytes]] = []
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            path = f"{prefix}/{entry.name}" if prefix else str(entry.name)
            if entry.filemode == pygit2.GIT_FILEMODE_TREE:
                stack.append((path, git[entry.id].peel(pygit2.Tree)))
            else:
                blobs.append((path, bytes(git[entry.id].data)))
    read = time.perf_counter() - start
    count = sum(len(documents.load_yaml_all(data.decode(), where=p)) for p, data in blobs)
    return {"seconds": time.perf_counter() - start, "read": read, "objects": count}


def phase_dulwich(repo: str) -> dict[str, float]:
    from dulwich.repo import Repo

    from kubemedic.model import documents

    start = time.perf_counter()
    git = Repo(repo)
    commit = git[git.get_peeled(b"refs/tags/v1")]
    store = git.object_store
    blobs = [
        (entry.path.decode(), store[entry.sha].as_raw_string())
        for entry in store.iter_tree_contents(commit.tree)  # type: ignore[attr-defined]
    ]
    read = time.perf_counter() - start
    count = sum(len(documents.load_yaml_all(data.decode(), where=p)) for p, data in blobs)
    return {"seconds": time.perf_counter() - start, "read": read, "objects": count}


def phase_load(repo: str) -> dict[str, float]:
    from kubemedic.drift import sources

    start = time.perf_counter()
    desired = sources.load(sources.Source(repository=repo, revision="v1"))
    return {"seconds": time.perf_counter() - start, "objects": len(desired.objects)}


PHASES = {
    "parse only": phase_parse,
    "pygit2": phase_pygit2,
    "dulwich": phase_dulwich,
    "kubemedic load": phase_load,
}


def run_phase(name: str, repo: Path) -> dict[str, float]:
    """One phase in a fresh interpreter (no warm caches from the others)."""
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--repo", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(PHASES[args.phase](args.repo)))
        return 0
    import dulwich
    import pygit2

    with tempfile.TemporaryDirectory(prefix="kubemedic-bench-git-") as scratch:
        start = time.perf_counter()
        repo = build(Path(scratch), args.files)
        print(
            f"built a repository of {args.files} manifests in {time.perf_counter() - start:.1f} s"
        )
        print(
            f"pygit2 {pygit2.__version__} (libgit2 {pygit2.LIBGIT2_VERSION}), "
            f"dulwich {'.'.join(map(str, dulwich.__version__))}"
        )
        medians: dict[str, float] = {}
        reads: dict[str, float] = {}
        for name in PHASES:
            results = [run_phase(name, repo) for _ in range(args.runs)]
            medians[name] = statistics.median(r["seconds"] for r in results)
            read = [r["read"] for r in results if "read" in r]
            if read:
                reads[name] = statistics.median(read)
            extra = f", of which reading the tree {reads[name]:.3f} s" if read else ""
            print(
                f"{name:>15}: {medians[name]:.3f} s (median of {args.runs}), "
                f"{int(results[0]['objects'])} objects{extra}"
            )
    print(
        f"ratio dulwich/pygit2: reading the tree {reads['dulwich'] / reads['pygit2']:.2f}x, "
        f"reading and parsing {medians['dulwich'] / medians['pygit2']:.2f}x"
    )
    budget = 5.0 * args.files / 2000
    verdict = "ok" if medians["kubemedic load"] <= budget else "MISSED"
    print(
        f"kubemedic load: {medians['kubemedic load']:.3f} s (target <= {budget:.1f} s, half "
        f"the drift budget of 10 s for 2,000 objects): {verdict}"
    )
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
