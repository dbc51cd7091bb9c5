"""Drift against Git: the desired state read from GitOps sources, compared with the live state.

``kubemedic.drift.sources`` reads the desired state (Git repositories, manifests, Kustomize).

May import: kubemedic.model, kubemedic.errors and its own subpackages.
"""
