"""Object factories for tests (re-exported from ``kubemedic.testing.builders``)."""

from kubemedic.testing.builders import *  # noqa: F403
from kubemedic.testing.builders import __all__ as __all__
