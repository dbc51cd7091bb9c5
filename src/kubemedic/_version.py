"""The package version, read by the build backend and by ``kubemedic --version``."""

__version__ = "0.1.0"
