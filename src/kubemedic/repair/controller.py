"""The repair loop inside ``kubemedic run`` (leader only): observe, decide, act, record."""

from __future__ import annotations

__all__: list[str] = []
