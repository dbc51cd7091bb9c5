"""What every layer of the simulator speaks (k8s.io/apimachinery's counterpart).

Object types (:mod:`.objects`: ``Obj``, ``Key``, ``Change``, ``clone``), the emulator's status
errors (:mod:`.errors`), the virtual clock and timestamp formats (:mod:`.clock`), name and label
validation (:mod:`.naming`), label and field selectors (:mod:`.selecting`, :mod:`.fieldlabels`),
the served API resources (:mod:`.apiresources`) and the OpenAPI definitions of the built-in
kinds (:mod:`.definitions`).

May import: :mod:`kubemedic.model`; nothing else of the simulator.
"""

from kubemedic.sim.machinery.apiresources import Registry, Resource
from kubemedic.sim.machinery.clock import VirtualClock, rfc3339, rfc3339_micro
from kubemedic.sim.machinery.errors import Cause, StatusError
from kubemedic.sim.machinery.objects import Change, Key, Obj, ObjView, clone
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = [
    "Cause",
    "Change",
    "Key",
    "LabelSelector",
    "Obj",
    "ObjView",
    "Registry",
    "Resource",
    "StatusError",
    "VirtualClock",
    "clone",
    "rfc3339",
    "rfc3339_micro",
]
