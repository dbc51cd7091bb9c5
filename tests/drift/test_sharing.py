"""One copy of the API server's knowledge: the emulator and the drift engine read the same."""

from kubemedic.model import defaults, schemas
from kubemedic.sim.apiserver.fields import fieldsets
from kubemedic.sim.apiserver.registry import defaulting
from kubemedic.sim.machinery import definitions


def test_the_emulator_defaults_objects_with_the_shared_table() -> None:
    assert defaulting._default_any is defaults.default_object
    assert defaulting._default_pod is defaults.default_pod


def test_the_emulator_reads_the_shared_definitions() -> None:
    assert definitions.definitions is schemas.definitions
    assert definitions.SchemaNode is schemas.SchemaNode
    assert fieldsets.KEY_DEFAULTS is schemas.KEY_DEFAULTS
