"""The element-type placeholders shared by the linalg kernels (real and complex dtypes).

A linalg kernel declares ``alias T = {{T}};`` (the element: ``f32``, ``f64``, ``vec2<f32>``,
``vec2<f64>``), ``alias R = {{R}};`` (its real type) and takes ``{{SCALAR}}``: the helper
functions ``sc_*`` of ``_wgsl/linalg_scalar_real.wgsl`` or ``_wgsl/linalg_scalar_complex.wgsl``
(the latter with the ``complex.wgsl`` functions it calls), so one kernel source computes with
real and complex elements alike (complex values interleaved, as NumPy stores them).
"""

from __future__ import annotations

import functools

from .errors import invalid_argument, unsupported
from .kernels import library_code, template_source
from .wgsl_types import DTYPE_TABLE, DTypeInfo

__all__ = ["LINALG_DTYPES", "element", "scalar_defines"]

#: The dtypes the linalg kernels take.
LINALG_DTYPES = ("float32", "float64", "complex64", "complex128")


def element(backend, dtype: str) -> DTypeInfo:
    """The dtype row of ``dtype`` after checking the device can compute it.

    Raises BackendError: invalid argument for a dtype outside :data:`LINALG_DTYPES`, unsupported
    where the adapter lacks the dtype's feature (``shader-f64`` for float64 and complex128)."""
    if dtype not in LINALG_DTYPES:
        raise invalid_argument(f"linalg kernels take {', '.join(LINALG_DTYPES)}, not {dtype!r}")
    info = DTYPE_TABLE[dtype]
    if not backend.supports(info.feature):
        raise unsupported(f"{dtype} needs the adapter feature {info.feature!r}, which this adapter lacks",
                          info.feature)
    return info


@functools.lru_cache(maxsize=None)
def scalar_defines(dtype: str, uses: str = "") -> dict[str, str]:
    """``{"T", "R", "SCALAR"}`` placeholders for ``dtype`` (one of :data:`LINALG_DTYPES`);
    ``SCALAR`` also holds the library functions (``kernels.library_code``) that ``uses``, WGSL
    calls of the kernel such as ``log_f32(x)``, names."""
    info = DTYPE_TABLE[dtype]
    real = info.real_compute
    name = "linalg_scalar_complex" if info.complex else "linalg_scalar_real"
    text = template_source(name).replace("{{R}}", real)
    library = library_code(text + "\n" + uses)
    return {"T": info.compute, "R": real, "SCALAR": text + ("\n\n" + library if library else "")}
