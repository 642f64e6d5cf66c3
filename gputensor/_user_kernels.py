"""User kernels in WGSL: ``gputensor.ElementwiseKernel`` and ``gputensor.RawKernel``.

ElementwiseKernel (in the spirit of CuPy's)
-------------------------------------------
::

    squared_diff = gt.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y);", "squared_diff")
    z = squared_diff(a, b)            # broadcasts a and b, allocates z (dtype T = a's dtype)
    z = squared_diff(a, 5.0)          # Python scalars are passed by value
    squared_diff(a, b, z)             # outputs may be given after the inputs (CuPy style)

    polar = gt.ElementwiseKernel("float32 x, float32 y", "float32 r, float32 phi",
                                 "r = sqrt(x * x + y * y);\\nphi = atan2(y, x);", "polar")
    r, phi = polar(x, y)              # several outputs: a tuple

* Parameter strings are comma-separated ``[raw] TYPE NAME``: TYPE is a gputensor dtype name
  (``bool``, ``int8`` ... ``uint64``, ``float16``, ``float32``, ``float64``) or a one-letter type
  placeholder. A placeholder takes the dtype of the arrays bound to it (inputs first, then outputs
  that are passed); when only Python scalars are bound to it, the default dtype of their kind
  (float: float32, int: the default integer, bool: bool); a NumPy scalar binds its own dtype.
  Two different dtypes for one placeholder raise ``TypeError``; an output whose placeholder nothing
  binds must be passed (``TypeError`` otherwise). The names ``i``, ``n``, names starting with ``_``
  and the placeholder letters ``P``, ``i``, ``n`` are reserved.
* The operation is WGSL statements. Each input is a value of its declared type's *compute type*
  (``float16`` is computed in ``f32``; ``int8``/``int16`` in ``i32``; ``uint8``/``uint16`` in
  ``u32``; ``bool`` is ``bool``); every placeholder is a WGSL ``alias`` of that type, so
  ``let d: T = x - y;`` and ``T(1)`` work. Outputs are ``var``s of their compute type: zero at the
  start for freshly allocated outputs; for outputs passed by the caller, their current value
  (so ``z += x`` accumulates, as CuPy's reference semantics do) unless the operation provably
  assigns the output first (then it is not read). ``i: u32`` is the element's linear index in the
  C-ordered broadcast shape and ``n: u32`` the element count. ``preamble=`` adds module-scope WGSL
  (helper functions, constants). The f64 math library (``exp_f64``, ``log_f64``, ``sin_f64``, ...)
  and the ``ew_*`` helpers of ``_wgsl/ewise_helpers.wgsl`` and ``ewise_int.wgsl`` may be called.
* ``raw`` inputs are not broadcast: ``raw T w`` makes a function ``w(j: u32) -> T`` returning
  element ``j`` of the array in C order (the array is copied to a contiguous one first if it is
  not contiguous, and must fit one storage binding). Raw outputs are not supported.
* Input arrays whose dtype differs from a fixed declared dtype are converted on load when NumPy
  casts safely (``int8`` array into an ``int32`` parameter); other mismatches raise ``TypeError``.
  Passed outputs must have exactly the output's dtype (``TypeError``) and the broadcast shape
  (``ValueError``), must not be broadcast views and must not overlap each other (``ValueError``).
  Inputs overlapping an output with a different layout are copied first, so in-place calls are safe.
* With no array argument at all, pass ``size=`` (the loop length). ``return_tuple=True`` always
  returns a tuple; ``no_return=True`` returns None.
* Strided, negative-step and broadcast operands need no copies; operands larger than one storage
  binding are split into several dispatches; packed output dtypes (bool, 8/16-bit) are stored
  exactly (atomic lane updates, which cost some speed next to 4/8-byte outputs).
* Compiled pipelines are cached per dtype signature and layout class (contiguous or strided, rank
  after merging dimensions): a loop calling the kernel compiles once. A bad operation raises
  :class:`KernelCompileError` carrying naga's message with line numbers relative to the operation
  (or preamble).

RawKernel
---------
::

    k = gt.RawKernel('''
        struct Params { rows: u32, cols: u32, alpha: f32 }
        @group(0) @binding(0) var<uniform> p: Params;
        @group(0) @binding(1) var<storage, read_write> x: array<f32>;
        @group(0) @binding(2) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(16, 16)
        fn scale(@builtin(global_invocation_id) g: vec3<u32>) {
            if (g.x < p.cols && g.y < p.rows) { y[g.y * p.cols + g.x] = p.alpha * x[g.y * p.cols + g.x]; }
        }''', "scale")
    k((cols_groups, rows_groups), (x, y), params=(rows, cols, 2.5))

Bindings are read from the shader's declarations (``@group(0) @binding(B) var<uniform> ...`` and
``var<storage, read | read_write> ...``, any numbers, attributes in either order; ``k.bindings``
lists them), as CuPy's RawKernel takes the kernel's parameters:

* the storage bindings take gputensor arrays: ``args`` in binding order, or a mapping
  ``{binding number or variable name: array}``. A wrong count, an unknown key or a missing
  binding raises ``TypeError`` naming the bindings;
* at most one ``var<uniform>`` takes ``params`` (declare it as a struct of 4-byte scalars in the
  order given; WGSL's uniform layout rules apply): ``params=``, or its entry in ``args`` when
  ``args`` lists every binding in order (or names it). ``params`` without a uniform, or a uniform
  without ``params``, raises ``TypeError``;
* an array's dtype must fit the declared element type: ``array<f32>`` (also ``vec4<f32>``,
  ``vec2f``, ``atomic<...>``) takes float32, ``i32`` int32, ``u32`` uint32, ``f16``/``f64``/
  ``i64``/``u64`` theirs; packed dtypes (bool, int8/uint8, int16/uint16, float16) bind as
  ``array<u32>`` or ``array<i32>`` in NumPy's byte layout, the last word padded: unpack them
  yourself and never write bytes past the array's own. Arrays of structs take any dtype.
  Otherwise ``TypeError`` naming the binding;
* other @groups, several uniforms, textures and samplers raise ``ValueError`` at construction.

``params``: a sequence of Python numbers (int -> its 32-bit two's-complement bits, float -> f32,
bool -> 0/1; NumPy 4-byte scalars as their bits, 8-byte ones as two words) or a bytes-like object
/ NumPy array whose bytes are passed as they are. ``grid`` is the number of
workgroups (an int, or a tuple of up to three ints, each at most the adapter's
``max-compute-workgroups-per-dimension``); the workgroup size is the source's
``@workgroup_size``. Each array is bound as exactly its bytes, so it must be C-contiguous and
start at an offset aligned to the adapter's ``min-storage-buffer-offset-alignment``: other arrays
(strided views, most slices) are copied to an aligned contiguous temporary, bound, and copied
back after the kernel (for every such argument: the kernel may have written any of them).
Pipelines are cached by source (and argument count); the context compiles the text as it is
(``WgpuContext.pipeline(..., source=...)``). Compile errors raise
:class:`KernelCompileError` with the line and column in the source.

This module is the public face; ``_elementwise_kernel`` holds ElementwiseKernel, ``_raw_kernel``
RawKernel and ``_user_kernel_compile`` the compile and its errors.
"""

from __future__ import annotations

from ._elementwise_kernel import ElementwiseKernel
from ._raw_kernel import RawKernel
from ._user_kernel_compile import KernelCompileError

__all__ = ["ElementwiseKernel", "RawKernel", "KernelCompileError"]
