"""Replaying a backend call kept for one call structure of a namespace function.

A namespace function that ran a backend operation for a call structure (dtypes, shapes,
strides, the other arguments) keeps a :class:`KeptCall` for it in its plan cache: the layout of
the result and the backend's kept call for that structure (``ops_sort.planned_sort``,
``ops_scan.planned_scan``, ``ops_reduce.planned_reduce``, ``ops_gather.planned_gather``,
``ops_concat.concat_call``, the gemm calls of a matmul). From then on a call of that structure
allocates the result and replays the backend call for the new pointers (:meth:`KeptCall.replay`),
which checks them as the first call's checks did; when the kept call no longer holds (another
context, a changed binding window or tunable) ``replay`` does nothing and returns None, and the
function takes its full path again.

A kept backend call has ``valid_on(backend)`` (whether it holds on the backend now) and a launch
``launch(backend, source, output[, extra])`` (``source``: the source pointer, or whatever the
call takes in that place; ``output``: the result's pointer; ``extra``: what else it takes, such
as the index pointers of a gather). A plan that keeps more facts of its call structure
subclasses :class:`KeptCall`, and its function calls ``replay`` first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._array_object import GpuArray
from ._dtypes import DType
from ._runtime import backend as _backend
from ._runtime import translate
from ._shapes import size_of

__all__ = ["KeptCall"]


class KeptCall:
    """The result layout of one call structure (shape, C-contiguous strides, dtype, bytes,
    whether it starts zeroed) and the backend call kept to write it (None until one is kept)."""

    __slots__ = ("shape", "strides", "dtype", "nbytes", "zero", "valid_on", "launch")

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], dtype: DType, *,
                 zero: bool = False, call: Any = None, launch: Callable[..., None] | None = None) -> None:
        self.shape, self.strides, self.dtype = shape, strides, dtype
        self.nbytes = size_of(shape) * dtype.itemsize
        self.zero = zero
        self.valid_on: Callable[[Any], bool] | None = None
        self.launch: Callable[..., None] | None = None
        self.hold(call, launch)

    @classmethod
    def like(cls, out: GpuArray, call: Any = None, *, zero: bool = False,
             launch: Callable[..., None] | None = None) -> KeptCall:
        """A kept call whose results have the layout of the (C-contiguous) array ``out``."""
        return cls(out._shape, out._strides, out.dtype, zero=zero, call=call, launch=launch)

    def hold(self, call: Any, launch: Callable[..., None] | None = None) -> None:
        """Keep the backend call ``call`` (None: none), replayed through its ``launch`` method or
        through ``launch`` (a callable of the same form) where given."""
        if call is None:
            self.valid_on = self.launch = None
        else:
            self.valid_on = call.valid_on
            self.launch = call.launch if launch is None else launch

    def alloc(self) -> GpuArray:
        """A new array of the result's layout (zeroed where the layout says so)."""
        return GpuArray._alloc(self.shape, self.strides, self.dtype, self.nbytes, self.zero)

    def replay(self, source: Any, extra: Any = None) -> GpuArray | None:
        """A new result written by the kept call from ``source`` (and ``extra``, where not None,
        passed after the result's pointer), or None, with nothing done, when no call is kept or
        it does not hold on the current backend. Raises what the call's pointer checks raise, as
        the namespace's exception (``translate``), before anything is recorded."""
        valid_on = self.valid_on
        if valid_on is None:
            return None
        backend = _backend()
        if not valid_on(backend):
            return None
        out = GpuArray._alloc(self.shape, self.strides, self.dtype, self.nbytes, self.zero)
        ptr = out._storage.ptr  # (a new array: its element 0 starts its storage)
        try:
            if extra is None:
                self.launch(backend, source, ptr)  # type: ignore[misc]
            else:
                self.launch(backend, source, ptr, extra)  # type: ignore[misc]
        except Exception as exc:
            raise translate(exc) from None
        return out
