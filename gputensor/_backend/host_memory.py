"""Host memory of transfers: flat byte views of the caller's buffers and large host copies.

``readable_bytes`` / ``writable_bytes`` turn any buffer-protocol object into a flat byte view
(without copying, except a non-contiguous source); ``host_copy`` copies between two such views,
split between threads (NumPy copies without the GIL) when large; ``fill_mapped`` copies into a
staging buffer mapped for writing.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .errors import invalid_argument

__all__ = ["round_up", "host_copy", "fill_mapped", "readable_bytes", "writable_bytes"]

#: Host copies are split between threads only in slices of at least this many bytes.
_COPY_SLICE_MIN = 4 << 20


def round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


_copy_pool: ThreadPoolExecutor | None = None
_copy_pool_workers = 0
_copy_pool_lock = threading.Lock()


def _copy_workers(helpers: int) -> ThreadPoolExecutor:
    """The shared pool of host-copy threads, with at least ``helpers`` workers."""
    global _copy_pool, _copy_pool_workers
    with _copy_pool_lock:
        if _copy_pool is None or _copy_pool_workers < helpers:
            # the old pool is not shut down (another thread may be using it): its idle threads
            # end when it is garbage-collected
            _copy_pool = ThreadPoolExecutor(max_workers=helpers, thread_name_prefix="gputensor-copy")
            _copy_pool_workers = helpers
        return _copy_pool


def host_copy(dst: memoryview, src: memoryview, threads: int = 1) -> None:
    """Copy the bytes of ``src`` into ``dst`` (flat byte views of equal size; ``dst`` writable),
    split between up to ``threads`` threads (NumPy copies without the GIL) when it is large.

    Raises ValueError when the sizes differ."""
    n = dst.nbytes
    if src.nbytes != n:
        raise ValueError(f"host copy of {src.nbytes} bytes into {n}")
    if n == 0:
        return
    d = np.frombuffer(dst, np.uint8)
    s = np.frombuffer(src, np.uint8)
    parts = min(int(threads), n // _COPY_SLICE_MIN)
    if parts <= 1:
        np.copyto(d, s)
        return
    step = round_up(-(-n // parts), 4096)
    pool = _copy_workers(parts - 1)
    futures = [pool.submit(np.copyto, d[at : at + step], s[at : at + step]) for at in range(step, n, step)]
    try:
        np.copyto(d[:step], s[:step])
    finally:
        for future in futures:  # every helper is done with the views before they can go away
            future.result()


def fill_mapped(staging: Any, src: memoryview, threads: int) -> None:
    """Copy ``src`` (a multiple of 4 bytes) to the start of ``staging``, mapped for writing,
    straight into the mapped memory (``host_copy``; wgpu-py's ``write_mapped`` where its
    writable view of the mapping is missing)."""
    get_range = getattr(staging, "_experimental_get_mapped_range", None)
    if get_range is None:
        staging.write_mapped(src, 0)
        return
    host_copy(get_range(0, src.nbytes), src, threads)  # the view dies here, before the unmap


def _flat_bytes(view: memoryview) -> memoryview:
    """A C-contiguous, non-empty ``view`` as a 1-D byte view of the same memory."""
    if view.ndim == 1 and view.format == "B":
        return view
    try:
        return view.cast("B")
    except TypeError:  # formats memoryview cannot cast (complex, non-native byte order, ...)
        return memoryview(np.asarray(view).reshape(-1).view(np.uint8))


def readable_bytes(src: Any) -> memoryview:
    """All bytes of ``src`` (any buffer-protocol object: bytes, bytearray, memoryview, NumPy
    array) as a flat byte view, in C order; a non-contiguous ``src`` is copied.

    Raises BackendError (invalid argument) when ``src`` does not expose its bytes.
    """
    try:
        view = memoryview(src)
    except TypeError:
        raise invalid_argument(f"source must be a bytes-like object, not {type(src).__name__}") from None
    if view.nbytes == 0:
        return memoryview(b"")
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return _flat_bytes(view)


def writable_bytes(dst: Any) -> memoryview:
    """``dst`` as a flat writable byte view of the same memory (all of its bytes).

    Raises BackendError (invalid argument) unless ``dst`` is a writable, C-contiguous
    bytes-like object.
    """
    try:
        view = memoryview(dst)
    except TypeError:
        raise invalid_argument(f"destination must be a writable bytes-like object, not {type(dst).__name__}") from None
    if view.readonly:
        raise invalid_argument("the destination is read-only")
    if not view.c_contiguous:
        raise invalid_argument("the destination must be C-contiguous")
    if view.nbytes == 0:
        return memoryview(bytearray(0))
    return _flat_bytes(view)
