"""gputensor.fft: the Array API (2024.12) fft extension on the device.

Every transform runs in WGSL kernels (``_backend/ops_fft.py``): batched 1-D complex transforms
along any axis of a strided array (``_c2c``), mixed-radix Stockham passes in workgroup memory,
four-step decompositions of long lengths and Bluestein's chirp-z for lengths with a prime factor
above 7; the n-D transforms are 1-D passes along each axis in turn. Argument rules (``n`` /
``s``, ``axis`` / ``axes``, ``norm``) are in ``_args``.
"""

from __future__ import annotations

from ._complex import fft, fftn, ifft, ifftn
from ._freq import fftfreq, fftshift, ifftshift, rfftfreq
from ._real import hfft, ihfft, irfft, irfftn, rfft, rfftn

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
