"""What kubemedic shows a person: findings rendered as a table or the JSON document
(``rendering``), and progress on a terminal's stderr, silent anywhere else (``progress``).

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = [
    "progress",
    "rendering",
]
