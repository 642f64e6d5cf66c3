"""gputensor.linalg: the Array API linear algebra extension on the GPU."""

from __future__ import annotations

from ._errors import LinAlgError
from ._factor import QRResult, SlogdetResult, cholesky, det, inv, matrix_power, qr, slogdet, solve

__all__ = ["LinAlgError", "QRResult", "SlogdetResult", "cholesky", "det", "inv", "matrix_power", "qr",
           "slogdet", "solve"]
