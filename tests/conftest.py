"""Test-wide settings.

Property tests must not flake on a busy 2-core CI machine: no per-example deadline, and under CI
(``CI`` set) a fixed derandomised search, so a run is reproducible from the commit alone.
"""

import os

from hypothesis import settings

settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
