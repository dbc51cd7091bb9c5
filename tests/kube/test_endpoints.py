"""The endpoints every kubemedic process serves, served for real on a free port: /metrics from
the process's own registry, /healthz and /readyz answering what their checks say, a process's own
route beside them, and a port already taken refused with OSError."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import ClientSession, web
from prometheus_client import CollectorRegistry, Gauge

from kubemedic.kube import endpoints


def test_metrics_probes_and_an_own_route() -> None:
    async def main() -> None:
        registry = CollectorRegistry()
        Gauge("kubemedic_test_answer", "The answer.", registry=registry).set(42)
        problems: dict[str, str | None] = {"healthy": None, "ready": "caches: v1/pods"}

        async def echo(request: web.Request) -> web.Response:
            return web.Response(body=await request.read())

        runner = await endpoints.serve(
            "127.0.0.1",
            0,
            registry=registry,
            healthy=lambda: problems["healthy"],
            ready=lambda: problems["ready"],
            routes=[("POST", "/echo", echo)],
        )
        port = endpoints.bound_port(runner)
        base = f"http://127.0.0.1:{port}"
        try:
            async with ClientSession() as http:
                async with http.get(f"{base}/metrics") as answer:
                    assert answer.status == 200
                    assert answer.headers["Content-Type"] == endpoints.EXPOSITION
                    assert "kubemedic_test_answer 42.0" in await answer.text()
                async with http.get(f"{base}/healthz") as answer:
                    assert (answer.status, await answer.text()) == (200, "ok")
                async with http.get(f"{base}/readyz") as answer:
                    assert (answer.status, await answer.text()) == (503, "caches: v1/pods")
                problems["ready"] = None
                async with http.get(f"{base}/readyz") as answer:
                    assert answer.status == 200
                problems["healthy"] = "stopping"
                async with http.get(f"{base}/healthz") as answer:
                    assert (answer.status, await answer.text()) == (503, "stopping")
                async with http.post(f"{base}/echo", data=b"hello") as answer:
                    assert await answer.read() == b"hello"
                async with http.post(f"{base}/metrics") as answer:
                    assert answer.status == 405
            with pytest.raises(OSError):
                await endpoints.serve("127.0.0.1", port, registry=registry)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_ready_defaults_to_healthy() -> None:
    async def main() -> tuple[int, int]:
        runner = await endpoints.serve(
            "127.0.0.1", 0, registry=CollectorRegistry(), healthy=lambda: "stuck"
        )
        base = f"http://127.0.0.1:{endpoints.bound_port(runner)}"
        try:
            async with (
                ClientSession() as http,
                http.get(f"{base}/healthz") as live,
                http.get(f"{base}/readyz") as ready,
            ):
                return live.status, ready.status
        finally:
            await runner.cleanup()

    assert asyncio.run(main()) == (503, 503)
