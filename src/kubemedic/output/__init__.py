"""What kubemedic shows a person: findings rendered as a table or the JSON document
(``rendering``), progress on a terminal's stderr, silent anywhere else (``progress``), and the
files a user names as outputs, written whole or not at all (``files``).

May import: :mod:`kubemedic.checks`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

__all__ = [
    "files",
    "progress",
    "rendering",
]
