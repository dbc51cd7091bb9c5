"""``python -m kubemedic.cli``: the ``kubemedic`` command."""

from kubemedic.cli import main

main()
