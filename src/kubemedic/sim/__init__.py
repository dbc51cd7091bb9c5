"""The simulator: a Kubernetes API emulator and cluster behaviour (test bed and demo only).

Product code never imports this package; only the ``sim`` and ``demo`` commands do.
"""
