"""dask.array with gputensor chunks, and dask.distributed workers (threads; processes, one per
adapter) computing on data larger than a worker's memory-pool limit, checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import gputensor as gt

from _compare import tol

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

H = np.random.default_rng(0).random((64, 48)).astype(np.float32)

CASES = [
    ("elementwise", lambda m, d: m.exp(d) * 2 + 1, "elementwise_floor"),
    ("sum axis 0", lambda m, d: d.sum(axis=0), "accumulated_abs"),
    ("mean", lambda m, d: d.mean(), "accumulated_abs"),
    ("mean axis 1", lambda m, d: d.mean(axis=1), "accumulated_abs"),
    ("std axis 0", lambda m, d: d.std(axis=0), "chained"),
    ("var", lambda m, d: d.var(), "chained"),
    ("max axis 1", lambda m, d: d.max(axis=1), "exact"),
    ("min", lambda m, d: d.min(), "exact"),
    ("argmax axis 0", lambda m, d: d.argmax(axis=0), "exact"),
    ("matmul", lambda m, d: d @ d.T, "chained"),
    ("tensordot", lambda m, d: m.tensordot(d, d, axes=([1], [1])), "chained"),
    ("rechunk", lambda m, d: (d.rechunk((32, 48)) if m is da else d) + 0, "exact"),
    ("slice and transpose", lambda m, d: d[::2, 5:30].T * 3, "elementwise_floor"),
    ("concatenate", lambda m, d: m.concatenate([d, d], axis=0), "exact"),
    ("cumsum", lambda m, d: d.cumsum(axis=0), "chained"),
    ("nansum", lambda m, d: m.nansum(d), "chained"),
    ("where", lambda m, d: m.where(d > 0.5, d, 0), "exact"),
    ("any", lambda m, d: (d > 0.99).any(), "exact"),
]


@pytest.mark.parametrize("name, call, family", CASES, ids=[c[0] for c in CASES])
def test_dask_array_of_gputensor_chunks(name, call, family):
    d = da.from_array(gt.asarray(H), chunks=(16, 16), asarray=False)
    assert isinstance(d._meta, gt.GpuArray)
    lazy = call(da, d)
    assert isinstance(lazy._meta, gt.GpuArray), type(lazy._meta)
    got = lazy.compute(scheduler="sync")
    assert isinstance(got, gt.GpuArray), type(got)
    want = call(np, H)
    np.testing.assert_allclose(got.get(), want, **tol("float32", family))


def test_map_blocks_and_blockwise():
    d = da.from_array(gt.asarray(H), chunks=(16, 24), asarray=False)
    got = d.map_blocks(lambda b: gt.exp(b) - b, dtype=np.float32).compute(scheduler="sync")
    np.testing.assert_allclose(got.get(), np.exp(H) - H, **tol("float32", "elementwise"))
    both = da.blockwise(gt.multiply, "ij", d, "ij", d, "ij", dtype=np.float32)
    np.testing.assert_allclose(both.compute(scheduler="threads").get(), H * H, **tol("float32", "elementwise"))
    host = np.asarray(d.compute())
    np.testing.assert_array_equal(host, H)


ROWS, COLS, CHUNK_ROWS = 16384, 256, 128  # 16 MiB of float32 in 128 KiB chunks
POOL_LIMIT = 4 << 20  # 4 MiB per worker: the array is 4x what a worker's pool may hold


def _block(block_info=None):
    """A chunk made on the worker from its position (no data leaves the client)."""
    r0, r1 = block_info[None]["array-location"][0]
    rng = np.random.default_rng(r0)
    return gt.asarray(rng.standard_normal((r1 - r0, COLS)).astype(np.float32))


def _host_data() -> np.ndarray:
    return np.concatenate([np.random.default_rng(r).standard_normal((CHUNK_ROWS, COLS)).astype(np.float32)
                           for r in range(0, ROWS, CHUNK_ROWS)])


def _worker_setup() -> str:
    gt.get_default_memory_pool().set_limit(POOL_LIMIT)
    return gt.Device().adapter


def _statistics(client, distributed) -> None:
    big = da.map_blocks(_block, chunks=((CHUNK_ROWS,) * (ROWS // CHUNK_ROWS), (COLS,)),
                        dtype=np.float32, meta=gt.empty((0, 0)))
    assert big.nbytes >= 4 * POOL_LIMIT
    # sums, squares and extremes (the OpenGL worker has no float64, which dask's mean and var
    # ask for): mean and std from them, each worker's chunks on its own adapter
    # one reduction at a time: each chunk then has one consumer and is freed after it (dask does
    # not see device memory, so four graphs sharing the chunks could keep more than a pool holds)
    stats = []
    for lazy in (big.sum(axis=0), (big * big).sum(axis=0), big.max(axis=1), big.min()):
        future = client.compute(lazy)
        distributed.wait(future, timeout=180)  # a failure, never a hang
        stats.append(future.result())
    for got in stats:
        assert isinstance(got, gt.GpuArray), type(got)  # moved back by value
    total, squares, row_max, low = (s.get().astype(np.float64) for s in stats)
    host = _host_data().astype(np.float64)
    np.testing.assert_allclose(total, host.sum(axis=0), **tol("float32", "sum_chunks"))
    np.testing.assert_allclose(row_max, host.max(axis=1), **tol("float32", "elementwise"))
    assert low == host.min()
    mean = total.sum() / host.size
    std = np.sqrt(squares / ROWS - (total / ROWS) ** 2)
    np.testing.assert_allclose(mean, host.mean(), **tol("float32", "moments_streamed"))
    np.testing.assert_allclose(std, host.std(axis=0), **tol("float32", "moments_streamed_rel"))


def test_distributed_threads():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        x = client.scatter(gt.asarray(H))
        total = client.submit(lambda a: gt.sum(a * 2), x).result()
        np.testing.assert_allclose(float(total), (H * 2).sum(), **tol("float32", "accumulated"))
        d = da.from_array(gt.asarray(H), chunks=(16, 16), asarray=False)
        np.testing.assert_allclose(d.mean(axis=0).compute().get(), H.mean(axis=0), **tol("float32", "accumulated"))


def test_distributed_processes_one_worker_per_adapter():
    """Two worker processes, each on its own adapter (lavapipe through Vulkan, llvmpipe through
    OpenGL), each with a pool limit a quarter of the data: chunks and results move by value."""
    distributed = pytest.importorskip("distributed")
    workers = {
        adapter: {"cls": distributed.Nanny,
                  "options": {"nthreads": 1, "env": {"GPUTENSOR_ADAPTER": adapter}}}
        for adapter in ("vulkan", "gl")
    }
    scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": None}}
    with distributed.SpecCluster(workers=workers, scheduler=scheduler) as cluster, \
            distributed.Client(cluster) as client:
        adapters = client.run(_worker_setup)
        assert sorted("OpenGL" in a for a in adapters.values()) == [False, True], adapters
        x = gt.asarray(H)
        for address in adapters:  # each worker computes on its own adapter
            got = client.submit(lambda a: gt.cumulative_sum(a, axis=1), x, workers=[address],
                                pure=False).result()
            np.testing.assert_allclose(got.get(), np.cumsum(H, axis=1), **tol("float32", "accumulated"))
        _statistics(client, distributed)


def test_percentile_of_gputensor_chunks():
    """da.percentile over gputensor chunks (chunk quantiles merged with np.interp) gives dask's
    own answer on the same data in NumPy chunks, as a gputensor array."""
    host = np.random.default_rng(3).random(1000)
    got = da.percentile(da.from_array(gt.asarray(host), chunks=250), [10, 50, 90]).compute()
    want = da.percentile(da.from_array(host, chunks=250), [10, 50, 90]).compute()
    assert isinstance(got, gt.GpuArray)
    np.testing.assert_allclose(np.asarray(got), want, **tol("float64", "percentile"))
