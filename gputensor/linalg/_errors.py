"""The linalg extension's exception."""

from __future__ import annotations

__all__ = ["LinAlgError"]


class LinAlgError(ValueError):
    """A matrix is singular or not positive definite where the operation needs it to be (a
    ``ValueError``, as NumPy's ``numpy.linalg.LinAlgError``)."""
