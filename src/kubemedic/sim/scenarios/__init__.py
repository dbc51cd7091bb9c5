"""Scenarios: incidents as YAML timelines played on a simulated cluster.

The schema (:mod:`.spec`) and loading of bundled or user files (:mod:`.loading`), the timeline
that plays one (:mod:`.timeline`), node pools (:mod:`.nodepools`), large-cluster generators
(:mod:`.generating`, :mod:`.nodebuilding`), host faults (:mod:`.hostfaults`) and the GitOps
applier syncing an Argo CD Application from a real Git repository (:mod:`.gitops`, over
:mod:`.gitrepo`, which uses pygit2 directly: the simulator does not import ``kubemedic.drift``).

May import: :mod:`kubemedic.sim.cluster`, :mod:`kubemedic.sim.apiserver`,
:mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`, pygit2.
"""

from kubemedic.sim.scenarios.generating import Layout, generate
from kubemedic.sim.scenarios.gitops import GitTarget
from kubemedic.sim.scenarios.hostfaults import inflict, mend
from kubemedic.sim.scenarios.loading import (
    Scenario,
    ScenarioError,
    ScenarioInfo,
    available,
    check_until,
    load,
    parse,
)
from kubemedic.sim.scenarios.spec import MAX_SECONDS
from kubemedic.sim.scenarios.timeline import Failure, Progress, ScenarioRun

__all__ = [
    "MAX_SECONDS",
    "Failure",
    "GitTarget",
    "Layout",
    "Progress",
    "Scenario",
    "ScenarioError",
    "ScenarioInfo",
    "ScenarioRun",
    "available",
    "check_until",
    "generate",
    "inflict",
    "load",
    "mend",
    "parse",
]
