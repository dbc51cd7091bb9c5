"""``run_checks``: the chosen checks, in order, each named to ``progress`` as it starts."""

from kubemedic import checks
from kubemedic.model.view import ClusterView
from tests.factories import node


def test_progress_is_told_each_check_as_it_starts_in_the_order_they_run() -> None:
    view = ClusterView.build([node("core-1")])
    told: list[str] = []
    names = ["node-not-ready", "node-memory-overcommit", "evicted"]
    checks.run_checks(view, names=names, progress=told.append)
    assert told == names
    told.clear()
    checks.run_checks(view, progress=told.append)
    assert told == list(checks.REGISTRY)
