"""kubemedic keeps Kubernetes clusters healthy and remembers what went wrong."""

from kubemedic._version import __version__

__all__ = ["__version__"]
