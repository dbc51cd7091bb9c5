"""Fixtures: a real emulator per test, served on its own event loop in a thread.

Tests talk to it as any client would (the real kubectl, lightkube, raw HTTP). ``Running.call``
runs a function on the server's loop, for the few tests that must set up state directly (the
simulator's components will do the same).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.apiserver.serving import write_kubeconfig

T = TypeVar("T")

KUBECTL = shutil.which("kubectl") or (
    "/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None
)
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


def call_on(loop: asyncio.AbstractEventLoop, fn: Callable[[], T], *, timeout: float) -> T:
    """Run ``fn`` on ``loop`` (a served simulation's, which is not thread-safe) and return its
    result, or raise its exception, in the calling test's thread."""
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(fn())
        except BaseException as exc:  # handed to the test thread
            done.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return done.result(timeout=timeout)


@dataclass
class Running:
    server: ApiServer
    loop: asyncio.AbstractEventLoop
    kubeconfig: Path

    @property
    def url(self) -> str:
        return self.server.url

    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the server's loop and return its result."""
        return call_on(self.loop, fn, timeout=30)

    def load(self, *objects: dict[str, Any]) -> None:
        self.call(lambda: self.server.load(objects))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        """One HTTP request; returns status, decoded JSON body (or text), headers."""
        data = None
        if body is not None:
            data = body if isinstance(body, bytes | str) else json.dumps(body)
        all_headers = {"Content-Type": content_type, **(headers or {})}
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            conn.request(method, path, body=data, headers=all_headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8")
        finally:
            conn.close()
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = text
        return resp.status, decoded, dict(resp.getheaders())

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        if env is not None and "HOME" not in env:
            # Without HOME kubectl writes its discovery cache under the current directory.
            env = {**env, "HOME": os.environ.get("HOME", str(self.kubeconfig.parent))}
        result = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result


def kubectl_editor(tmp_path: Path, script: str) -> dict[str, str]:
    """The environment for ``kubectl edit`` with an editor that runs the Python ``script`` on
    the object it is handed, loaded as ``doc`` (YAML) and written back after it ran; the
    editor's files are written in ``tmp_path``. Pass it as ``Running.kubectl(..., env=...)``."""
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, yaml\n"
        "path = sys.argv[-1]\n"
        "doc = yaml.safe_load(open(path))\n"
        f"{script}\n"
        "open(path, 'w').write(yaml.safe_dump(doc))\n"
    )
    launcher = tmp_path / "editor.sh"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {editor} "$@"\n')
    launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "KUBE_EDITOR": str(launcher), "EDITOR": str(launcher)}


def start_emulator(tmp_path: Path, **kwargs: Any) -> Iterator[Running]:
    loop = asyncio.new_event_loop()
    ready: Future[ApiServer] = Future()

    async def main() -> None:
        server = ApiServer(**kwargs)
        await server.start()
        ready.set_result(server)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(main(), loop).result(timeout=30)
    server = ready.result()
    config = tmp_path / "kubeconfig"
    write_kubeconfig(config, server.url)
    try:
        yield Running(server, loop, config)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)
