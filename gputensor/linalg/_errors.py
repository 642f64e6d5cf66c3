"""The linalg extension's exception."""

from __future__ import annotations

__all__ = ["LinAlgError"]


class LinAlgError(ValueError):
    """A linear-algebra routine failed on its input: a singular or non-positive-definite matrix
    where the operation needs it to be, or an iteration that did not converge (a
    ``ValueError``, as NumPy's ``numpy.linalg.LinAlgError``)."""
