"""API emulator benchmark: write throughput, a 150,000-pod list, 20 watchers on a write stream.

    python bench/apiserver.py [--pods 150000 --writes 5000 --watchers 20 --stream-seconds 30]

Targets (2-core machine, from the emulator's issue):

* >= 2,000 creates or patches per second from one client (one keep-alive connection, one
  request at a time, as a controller's client does);
* a list of 150,000 pods served in <= 5 s (``GET /api/v1/pods``, the whole body read);
* 20 concurrent watchers each receiving every event of a 5,000-writes/minute stream without
  falling behind (every event arrives; the worst delay from a write's response to its event's
  arrival is reported, and must stay under one second).

The emulator runs as ``kubemedic sim serve`` in its own process (client and server do not share
a GIL), pre-loaded with a synthetic cluster from ``bench/synthetic.py``. The baseline, measured
in the same run on the same client, is a bare aiohttp server in its own process that answers
each write with a fixed small JSON body and the list with the same number of bytes, prepared in
advance: what the HTTP stack alone costs. Ratios to it are printed. Exit status: 0 when every
target passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
WRITES_PER_SECOND = 2000.0
LIST_SECONDS = 5.0
STREAM_PER_MINUTE = 5000.0
MAX_LAG = 1.0

_BASELINE_SERVER = """
import sys
from aiohttp import web
size = int(sys.argv[2])
blob = b'{"kind":"PodList","items":[' + b'{"a":1},' * (size // 8) + b'{"a":1}]}'
small = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"1"}}'
async def write(request):
    await request.read()
    return web.Response(body=small, status=201, content_type="application/json")
async def listing(request):
    return web.Response(body=blob, content_type="application/json")
app = web.Application()
app.router.add_route("POST", "/write", write)
app.router.add_route("PATCH", "/write", write)
app.router.add_route("GET", "/list", listing)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_emulator(load: Path | None, kubeconfig: Path) -> tuple[subprocess.Popen[bytes], str]:
    args = [sys.executable, "-c", "from kubemedic.cli import main; main()", "sim", "serve"]
    args += ["--kubeconfig-out", str(kubeconfig), "--history", "1000000"]
    if load is not None:
        args += ["--load", str(load)]
    proc = subprocess.Popen(args, env=_env(), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    while not kubeconfig.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise SystemExit(f"emulator did not start: {err[-2000:]}")
        time.sleep(0.2)
    import yaml

    url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    return proc, str(url)


def start_baseline(list_bytes: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", _BASELINE_SERVER, str(port), str(list_bytes)], env=_env()
    )
    return proc, f"http://127.0.0.1:{port}"


async def _wait_up(url: str) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        for _ in range(600):
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url + "/list" if "/api" not in url else url) as resp:
                    await resp.read()
                    return
            await asyncio.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def _pod(name: str, namespace: str) -> dict[str, Any]:
    sys.path[:0] = [str(SRC)]
    from kubemedic.testing import bodies

    body = bodies.pod(name, namespace=namespace, labels={"app": "bench", "tier": "web"})
    body.pop("status", None)
    for key in ("uid", "creationTimestamp", "resourceVersion", "managedFields"):
        body["metadata"].pop(key, None)
    return body


async def writes(
    url: str, count: int, *, baseline: bool, in_flight: int = 1, prefix: str = "w"
) -> dict[str, float]:
    """Creates then strategic-merge patches from one client: ``in_flight`` requests at a time,
    each on its own keep-alive connection (1 = strictly sequential)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:
        if not baseline:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
            async with session.post(
                url + "/api/v1/namespaces",
                data=orjson.dumps(namespace),
                headers={"Content-Type": "application/json"},
            ) as resp:
                await resp.read()
        create_url = url + "/write" if baseline else url + "/api/v1/namespaces/bench/pods"
        template = _pod("p", "bench")

        async def create(worker: int) -> None:
            body = dict(template, metadata=dict(template["metadata"]))
            for i in range(worker, count, in_flight):
                body["metadata"]["name"] = f"{prefix}-{i}"
                async with session.post(
                    create_url,
                    data=orjson.dumps(body),
                    headers={"Content-Type": "application/json"},
                ) as resp:
                    await resp.read()
                    if resp.status != 201:
                        raise SystemExit(f"create answered {resp.status}")

        async def patch(worker: int) -> None:
            for i in range(worker, count, in_flight):
                target = (
                    url + "/write"
                    if baseline
                    else f"{url}/api/v1/namespaces/bench/pods/{prefix}-{i}"
                )
                change = {"metadata": {"labels": {"round": str(i % 7)}}}
                async with session.patch(
                    target,
                    data=orjson.dumps(change),
                    headers={"Content-Type": "application/strategic-merge-patch+json"},
                ) as resp:
                    await resp.read()
                    if resp.status not in (200, 201):
                        raise SystemExit(f"patch answered {resp.status}")

        started = time.perf_counter()
        await asyncio.gather(*(create(w) for w in range(in_flight)))
        created = time.perf_counter() - started
        started = time.perf_counter()
        await asyncio.gather(*(patch(w) for w in range(in_flight)))
        patched = time.perf_counter() - started
    return {"creates_per_s": count / created, "patches_per_s": count / patched}


async def list_all(url: str, *, baseline: bool) -> tuple[float, int, int]:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        started = time.perf_counter()
        async with session.get(url + ("/list" if baseline else "/api/v1/pods")) as resp:
            body = await resp.read()
        elapsed = time.perf_counter() - started
    items = -1 if baseline else len(orjson.loads(body)["items"])
    return elapsed, len(body), items


async def watch_stream(url: str, *, watchers: int, seconds: float) -> dict[str, float]:
    """``watchers`` watches on one namespace while one client writes at 5,000/minute."""
    import aiohttp

    per_second = STREAM_PER_MINUTE / 60
    total = int(per_second * seconds)
    written_at: dict[str, float] = {}
    received: list[dict[str, float]] = [{} for _ in range(watchers)]
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(
            url + "/api/v1/namespaces",
            data=orjson.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "stream"}}
            ),
            headers={"Content-Type": "application/json"},
        ) as resp:
            await resp.read()
        async with session.get(url + "/api/v1/namespaces/stream/configmaps") as resp:
            rv = orjson.loads(await resp.read())["metadata"]["resourceVersion"]

        async def watch(index: int) -> None:
            params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true"}
            async with session.get(
                url + "/api/v1/namespaces/stream/configmaps", params=params
            ) as resp:
                async for line in resp.content:
                    event = orjson.loads(line)
                    if event["type"] == "BOOKMARK":
                        continue
                    received[index][event["object"]["metadata"]["name"]] = time.perf_counter()
                    if len(received[index]) >= total:
                        return

        tasks = [asyncio.create_task(watch(i)) for i in range(watchers)]
        await asyncio.sleep(0.5)
        writer = aiohttp.ClientSession()
        try:
            started = time.perf_counter()
            for i in range(total):
                due = started + i / per_second
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                name = f"s-{i}"
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": {"i": str(i)},
                }
                async with writer.post(
                    url + "/api/v1/namespaces/stream/configmaps",
                    data=orjson.dumps(body),
                    headers={"Content-Type": "application/json"},
                ) as resp:
                    await resp.read()
                written_at[name] = time.perf_counter()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
        finally:
            await writer.close()
            for task in tasks:
                task.cancel()
    complete = sum(1 for r in received if len(r) >= total)
    lags = [got[name] - written_at[name] for got in received for name in got if name in written_at]
    return {
        "events": float(total),
        "watchers_complete": float(complete),
        "max_lag_s": max(lags) if lags else float("inf"),
        "p99_lag_s": sorted(lags)[int(len(lags) * 0.99)] if lags else float("inf"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--writes", type=int, default=5000)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--stream-seconds", type=float, default=30.0)
    parser.add_argument(
        "--in-flight", type=int, default=4, help="concurrent requests of the second write run"
    )
    args = parser.parse_args(argv)

    sys.path[:0] = [str(SRC), str(HERE)]
    import synthetic

    ok = True
    with tempfile.TemporaryDirectory(prefix="kubemedic-bench-api-") as tmp:
        snap = Path(tmp) / "snap"
        mark = time.perf_counter()
        synthetic.write_snapshot(
            snap, nodes=max(10, args.pods // 30), pods=args.pods, events=0, seed=7
        )
        for extra in snap.glob("events*.json"):
            extra.unlink()  # the list is about pods; owners stay (else their pods are collected)
        print(f"generated {args.pods} pods in {time.perf_counter() - mark:.1f} s")
        mark = time.perf_counter()
        emulator, url = start_emulator(snap, Path(tmp) / "kubeconfig")
        print(f"emulator loaded them in {time.perf_counter() - mark:.1f} s at {url}")
        try:
            asyncio.run(_wait_up(url + "/version"))
            elapsed, size, items = asyncio.run(list_all(url, baseline=False))
            baseline, base_url = start_baseline(size)
            try:
                asyncio.run(_wait_up(base_url))
                base_elapsed, _, _ = asyncio.run(list_all(base_url, baseline=True))
                base_writes = asyncio.run(writes(base_url, args.writes, baseline=True))
                base_parallel = asyncio.run(
                    writes(base_url, args.writes, baseline=True, in_flight=args.in_flight)
                )
            finally:
                baseline.terminate()
                baseline.wait()
            list_ok = elapsed <= LIST_SECONDS and items >= args.pods
            ok &= list_ok
            print(
                f"list of {items} pods ({size / 1e6:.0f} MB): {elapsed:.2f} s "
                f"(baseline {base_elapsed:.2f} s, ratio {elapsed / base_elapsed:.2f}x) "
                f"target <= {LIST_SECONDS:.0f} s: {'PASS' if list_ok else 'FAIL'}"
            )
            rates = asyncio.run(writes(url, args.writes, baseline=False))
            parallel = asyncio.run(
                writes(url, args.writes, baseline=False, in_flight=args.in_flight, prefix="c")
            )
            for label, got, base in (
                ("sequential", rates, base_writes),
                (f"{args.in_flight} in flight", parallel, base_parallel),
            ):
                for name in ("creates_per_s", "patches_per_s"):
                    rate_ok = got[name] >= WRITES_PER_SECOND
                    ok &= rate_ok or label != "sequential"
                    print(
                        f"{name.replace('_per_s', '')} ({label}): {got[name]:.0f}/s "
                        f"(baseline {base[name]:.0f}/s, ratio {got[name] / base[name]:.2f}x) "
                        f"target >= {WRITES_PER_SECOND:.0f}/s: {'PASS' if rate_ok else 'FAIL'}"
                    )
            stream = asyncio.run(
                watch_stream(url, watchers=args.watchers, seconds=args.stream_seconds)
            )
            stream_ok = (
                stream["watchers_complete"] == args.watchers and stream["max_lag_s"] < MAX_LAG
            )
            ok &= stream_ok
            print(
                f"watch: {args.watchers} watchers x {stream['events']:.0f} events at "
                f"{STREAM_PER_MINUTE:.0f}/min: {stream['watchers_complete']:.0f} complete, "
                f"p99 lag {stream['p99_lag_s'] * 1000:.1f} ms, max {stream['max_lag_s'] * 1000:.1f}"
                f" ms, target all complete and < {MAX_LAG:.0f} s: "
                f"{'PASS' if stream_ok else 'FAIL'}"
            )
        finally:
            emulator.terminate()
            emulator.wait(timeout=60)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
