"""The ComputeBackend contract and its enums.

The contract is BLAS-like and pointer-based, in the manner of cuBLAS/cuDNN: ``alloc`` returns an
opaque integer device pointer, ``ptr + k`` addresses ``k`` bytes into the allocation, and every
operation takes such pointers. ``WebGpuBackend`` (webgpu.py) implements it on a WgpuContext, as a
thin adapter over the operations the namespace uses (``interface.Operations``).

The enums name operations; they have no op table of their own. Each member's ``op_name`` is the
row of the one elementwise table (``elementwise_ops.OPS``, the namespace's ops) or the
reduction it runs, so ``UnaryOp.NEG`` is the namespace's ``negative`` (signed-zero safe),
``BinaryOp.MAX`` its ``maximum``, ``BinaryOp.SUB`` its ``subtract``; ``relu``, ``sigmoid``,
``gelu`` and ``silu`` are rows of the same table outside the Array API.
"""

from __future__ import annotations

import abc
import enum
from typing import Any


class BackendTranspose(enum.Enum):
    """Whether a gemm operand is used as stored, transposed, or conjugate-transposed."""

    NO_TRANS = "N"
    TRANS = "T"
    CONJ_TRANS = "C"

    def __str__(self) -> str:
        return self.value


class ReduceOp(enum.Enum):
    """Reductions over one axis (the namespace's reductions of the same names)."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    MEAN = "mean"
    PROD = "prod"

    def __str__(self) -> str:
        return self.value

    @property
    def op_name(self) -> str:
        """The namespace reduction this runs."""
        return self.value


class UnaryOp(enum.Enum):
    """Elementwise functions of one operand (float dtypes)."""

    RELU = "relu"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    ABS = "abs"
    NEG = "neg"
    SIN = "sin"
    COS = "cos"
    SQUARE = "square"
    RECIPROCAL = "reciprocal"
    GELU = "gelu"
    SILU = "silu"

    def __str__(self) -> str:
        return self.value

    @property
    def op_name(self) -> str:
        """The row of the elementwise table this runs."""
        return _NAMESPACE_NAMES.get(self.value, self.value)


class BinaryOp(enum.Enum):
    """Elementwise functions of two operands (float dtypes)."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MAX = "max"
    MIN = "min"
    POW = "pow"

    def __str__(self) -> str:
        return self.value

    @property
    def op_name(self) -> str:
        """The row of the elementwise table this runs."""
        return _NAMESPACE_NAMES.get(self.value, self.value)


#: The contract's short names whose namespace op is spelled otherwise (the rest are the same).
_NAMESPACE_NAMES = {
    "neg": "negative",
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "max": "maximum",
    "min": "minimum",
}


class ComputeBackend(abc.ABC):
    """Abstract compute backend: memory, transfers and the kernels the namespace is built on.

    Pointers are Python ints returned by ``alloc``. All operations default to float32; a keyword
    ``dtype=`` ('float16', 'float32', 'float64') selects another where the device supports it.
    """

    @abc.abstractmethod
    def name(self) -> str:
        """Short backend name."""

    @abc.abstractmethod
    def init(self) -> None:
        """Select the device; a second call is a no-op."""

    @abc.abstractmethod
    def is_initialized(self) -> bool:
        """Whether ``init`` has run."""

    @abc.abstractmethod
    def alloc(self, nbytes: int, *, zero: bool = True) -> int:
        """Allocate ``nbytes`` of device memory and return its pointer: zero-filled, or with
        unspecified contents when ``zero=False`` (for memory about to be overwritten)."""

    @abc.abstractmethod
    def free(self, ptr: int) -> None:
        """Free an allocation made by ``alloc``."""

    @abc.abstractmethod
    def copy_htod(self, dst_ptr: int, src: Any) -> None:
        """Copy the bytes of ``src`` (any bytes-like object) to the device at ``dst_ptr``."""

    @abc.abstractmethod
    def copy_dtoh(self, dst: Any, src_ptr: int) -> None:
        """Fill the writable bytes-like ``dst`` with the device bytes at ``src_ptr``."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Block until all submitted work is done."""

    @abc.abstractmethod
    def gemm(self, trans_a: BackendTranspose, trans_b: BackendTranspose, m: int, n: int, k: int,
             alpha: float, a: int, lda: int, b: int, ldb: int, beta: float, c: int, ldc: int,
             *, dtype: str = "float32") -> None:
        """``C = alpha*op(A)*op(B) + beta*C``, column-major, as cublasSgemm."""

    @abc.abstractmethod
    def conv2d_forward(self, input: int, input_shape: tuple[int, int, int, int], filter: int,
                       filter_shape: tuple[int, int, int, int], output: int,
                       output_shape: tuple[int, int, int, int], stride: tuple[int, int] | int,
                       padding: tuple[int, int] | int, *, dtype: str = "float32") -> None:
        """NCHW cross-correlation with zero padding."""

    @abc.abstractmethod
    def attention(self, q: int, k: int, v: int, o: int, batch: int, heads: int, seq_q: int,
                  seq_kv: int, head_dim: int, scale: float, causal: bool,
                  *, dtype: str = "float32") -> None:
        """``o = softmax(q @ k^T * scale) @ v`` over contiguous [batch, heads, seq, head_dim]."""

    @abc.abstractmethod
    def reduce(self, op: ReduceOp, input: int, output: int, shape: tuple[int, ...], axis: int,
               *, dtype: str = "float32") -> None:
        """Reduce a contiguous row-major array over ``axis``."""

    @abc.abstractmethod
    def unary(self, op: UnaryOp, input: int, output: int, n: int, *, dtype: str = "float32") -> None:
        """Elementwise ``output = op(input)`` over ``n`` contiguous elements."""

    @abc.abstractmethod
    def binary(self, op: BinaryOp, a: int, b: int, output: int, n: int, *, dtype: str = "float32") -> None:
        """Elementwise ``output = op(a, b)`` over ``n`` contiguous elements."""
