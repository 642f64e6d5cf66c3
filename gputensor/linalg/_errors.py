"""The linear-algebra extension's exception."""

from __future__ import annotations

__all__ = ["LinAlgError"]


class LinAlgError(ValueError):
    """A linear-algebra routine failed on its input (singular or non-positive-definite
    matrices, no convergence); a ``ValueError``, as NumPy's ``numpy.linalg.LinAlgError``."""
