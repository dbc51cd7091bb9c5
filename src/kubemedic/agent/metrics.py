"""The agent's Prometheus metrics, in a registry of its own (served on ``/metrics``).

- ``kubemedic_agent_probes_total{daemon, result}``: health checks run (daemon ``kubelet`` or
  ``runtime``; result ``healthy`` or ``unhealthy``);
- ``kubemedic_agent_daemon_unhealthy{daemon}``: 1 while the daemon is judged unhealthy;
- ``kubemedic_agent_daemon_gave_up{daemon}``: 1 once self-repair gave up on it;
- ``kubemedic_agent_daemon_restarts{daemon}``: restarts counted against the limit;
- ``kubemedic_agent_restarts_total{daemon, trigger, result}``: self-repair restarts (``done``,
  ``failed``);
- ``kubemedic_agent_requests_total{action, state}``: the controller's requests by answer
  (``done``, ``accepted``, ``failed``, ``refused``);
- ``kubemedic_agent_heartbeat_timestamp_seconds``: when the conditions were last written;
- ``kubemedic_agent_api_errors_total{operation}``: failed API calls (``status``, ``watch``,
  ``request``, ``event``).
"""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from kubemedic.agent.policy import DaemonState

__all__ = ["AgentMetrics"]


class AgentMetrics:
    """The metrics of one agent (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._probes = Counter(
            "kubemedic_agent_probes", "Health checks run.", ["daemon", "result"], registry=r
        )
        self._unhealthy = Gauge(
            "kubemedic_agent_daemon_unhealthy",
            "1 while the daemon is unhealthy.",
            ["daemon"],
            registry=r,
        )
        self._gave_up = Gauge(
            "kubemedic_agent_daemon_gave_up",
            "1 once self-repair gave up restarting the daemon.",
            ["daemon"],
            registry=r,
        )
        self._counted = Gauge(
            "kubemedic_agent_daemon_restarts",
            "Restarts of the daemon counted against its limit.",
            ["daemon"],
            registry=r,
        )
        self._restarts = Counter(
            "kubemedic_agent_restarts",
            "Restarts of a daemon by self-repair.",
            ["daemon", "trigger", "result"],
            registry=r,
        )
        self._requests = Counter(
            "kubemedic_agent_requests",
            "Requests of the repair controller, by how they were answered.",
            ["action", "state"],
            registry=r,
        )
        self._heartbeat = Gauge(
            "kubemedic_agent_heartbeat_timestamp_seconds",
            "When the agent last wrote its conditions (Unix time).",
            registry=r,
        )
        self._api_errors = Counter(
            "kubemedic_agent_api_errors",
            "Failed calls to the API server.",
            ["operation"],
            registry=r,
        )

    def probe(self, daemon: str, healthy: bool) -> None:
        self._probes.labels(daemon, "healthy" if healthy else "unhealthy").inc()

    def daemon(self, daemon: str, state: DaemonState) -> None:
        self._unhealthy.labels(daemon).set(1 if state.unhealthy else 0)
        self._gave_up.labels(daemon).set(1 if state.gave_up else 0)
        self._counted.labels(daemon).set(len(state.restarts))

    def restart(self, daemon: str, trigger: str, *, ok: bool) -> None:
        self._restarts.labels(daemon, trigger, "done" if ok else "failed").inc()

    def request(self, action: str, state: str) -> None:
        self._requests.labels(action, state).inc()

    def heartbeat(self, now: datetime) -> None:
        self._heartbeat.set(now.timestamp())

    def api_error(self, operation: str) -> None:
        self._api_errors.labels(operation).inc()

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)
