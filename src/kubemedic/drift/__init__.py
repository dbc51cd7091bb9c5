"""Drift against Git: the desired state of objects compared with the live cluster, both ways.

The pure engine (no I/O: objects in, drift out) compares each desired object with its live
counterpart after normalising server defaults and server-managed fields, reports fields
``changed``, ``removed`` (in Git, not live) and ``live-only`` (live, not in Git, written by a
person or left behind by the GitOps tool), attributes each through managedFields, applies
Argo CD-style ignore rules, and builds the JSON patch that reverts the object. docs/drift.md is
the operator's description of the rules.

Public API: :func:`diff` (one object), :func:`diff_objects` (many, with a live lookup),
:class:`DriftRules` / :class:`IgnoreRule` / :class:`ManagerClasses` (what counts), the results
:class:`ObjectDrift` / :class:`FieldDrift` / :class:`Owner`, and the renderings
:func:`drift_to_json` and :func:`drift_finding`.

``drift.sources`` reads the desired state (Git, manifests, Kustomize; Argo CD and Flux
discovery); ``drift.checking`` fetches the live objects through the API and runs the engine;
``drift.settings`` reads the configuration's ``drift:`` section.

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors` (the
engine, pure); :mod:`kubemedic.kube` and :mod:`kubemedic.config` (``checking``, ``settings``);
the sources may do I/O (Git, ``kubectl kustomize``).
"""

from kubemedic.drift.engine import (
    DriftError,
    FieldDrift,
    LiveLookup,
    ObjectDrift,
    Owner,
    diff,
    diff_objects,
)
from kubemedic.drift.jqpaths import JqPathError
from kubemedic.drift.rendering import drift_finding, drift_to_json
from kubemedic.drift.rules import DriftRules, IgnoreRule, ManagerClass, ManagerClasses

__all__ = [
    "DriftError",
    "DriftRules",
    "FieldDrift",
    "IgnoreRule",
    "JqPathError",
    "LiveLookup",
    "ManagerClass",
    "ManagerClasses",
    "ObjectDrift",
    "Owner",
    "diff",
    "diff_objects",
    "drift_finding",
    "drift_to_json",
]
