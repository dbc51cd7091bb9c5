"""Patches as the server applies them: JSON patch, JSON merge patch and strategic merge patch,
with Go's wording of every error.

May import: :mod:`kubemedic.sim.machinery`; no other part of the API server.
"""

from kubemedic.sim.apiserver.patches.gojson import PatchError
from kubemedic.sim.apiserver.patches.patching import json_patch, merge_patch
from kubemedic.sim.apiserver.patches.strategic import strategic_merge_patch

__all__ = ["PatchError", "json_patch", "merge_patch", "strategic_merge_patch"]
