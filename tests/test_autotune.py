"""The opt-in gemm-family plan autotuner (``gputensor._backend.autotune``): the switch, keys,
tuning once per key, the on-disk cache, and correct results with tuned plans (fast on lavapipe:
one call per timing sample)."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import BackendError, autotune, get_backend, ops_gemm
from test_backend_conv import run_conv


@pytest.fixture()
def tuning(monkeypatch, tmp_path):
    """Autotuner state isolated per test: cache in tmp_path, switch unset, timing cheap, and a
    list of the (key-less) plans ``time_plan`` timed."""
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(autotune.ENV, raising=False)
    monkeypatch.delenv(ops_gemm.SPLITK_ENV, raising=False)
    monkeypatch.setattr(autotune, "_override", None)
    monkeypatch.setattr(autotune, "SAMPLES", 1)
    monkeypatch.setattr(autotune, "SAMPLE_S", 0.0)
    timed: list = []
    real = autotune.time_plan

    def counting(backend, request, ptrs, plan, reps, best):
        timed.append(plan)
        return real(backend, request, ptrs, plan, reps, best)

    monkeypatch.setattr(autotune, "time_plan", counting)
    autotune.reset()
    yield timed
    autotune.reset()


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return gt.asnumpy(gt.asarray(a) @ gt.asarray(b))


def _operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(np.float32),
            rng.uniform(-1, 1, (k, n)).astype(np.float32))


def _check(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = (a.shape[1] + 4) * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 1e-30
    assert np.all(np.abs(got - ref) <= tol)


def _cache_files(tmp_path):
    d = tmp_path / "cache"
    return sorted(d.glob("autotune-*.json")) if d.is_dir() else []


# ---- the switch ------------------------------------------------------------------------------
@pytest.mark.parametrize("raw,want", [(None, False), ("", False), ("0", False), ("off", False),
                                      ("False", False), ("no", False), ("1", True),
                                      (" true ", True), ("YES", True), ("on", True)])
def test_parse_env(raw, want):
    assert autotune.parse_env(raw) is want


def test_parse_env_rejects_garbage(tuning, monkeypatch):
    with pytest.raises(BackendError):
        autotune.parse_env("maybe")
    monkeypatch.setenv(autotune.ENV, "2")
    with pytest.raises(BackendError):
        autotune.enabled()


def test_env_and_switch(tuning, monkeypatch):
    assert not autotune.enabled()
    monkeypatch.setenv(autotune.ENV, "1")
    assert autotune.enabled()
    prev = gt.autotune(False)  # the switch overrides the environment
    assert prev == True and bool(prev) is True  # noqa: E712
    assert not autotune.enabled()
    assert gt.autotune(True) == False  # noqa: E712
    assert autotune.enabled()
    with pytest.raises(TypeError):
        gt.autotune(1)


def test_switch_context_manager(tuning):
    assert not autotune.enabled()
    with gt.autotune(True) as prev:
        assert not prev and autotune.enabled()
        with gt.autotune(False):
            assert not autotune.enabled()
        assert autotune.enabled()
    assert not autotune.enabled()
    assert autotune._override is None  # back to following the environment
    assert bool(gt.autotune()) is False  # query only


def test_off_by_default(tuning, tmp_path):
    a, b = _operands(70, 90, 50)
    _check(_matmul(a, b), a, b)
    assert tuning == []
    assert _cache_files(tmp_path) == []


# ---- keys ----------------------------------------------------------------------------------------
def test_bucket_and_keys():
    assert [autotune.bucket(x) for x in (0, 1, 2, 3, 64, 65, 1000)] == [1, 1, 2, 4, 64, 128, 1024]
    key = autotune.make_key("gemm", "f32", 100, 64, 300, 1, ("NN",))
    assert key == autotune.make_key("gemm", "f32", 128, 33, 512, 1, ("NN",))
    assert key != autotune.make_key("gemm", "f32", 129, 64, 300, 1, ("NN",))
    assert key != autotune.make_key("gemm", "f32", 100, 64, 300, 2, ("NN",))
    assert key != autotune.make_key("gemm", "f16", 100, 64, 300, 1, ("NN",))
    assert key != autotune.make_key("conv2d", "f32", 100, 64, 300, 1, ("NN",))
    assert key != autotune.make_key("gemm", "f32", 100, 64, 300, 1, ("TN",))


def test_fingerprint_per_adapter():
    info = {"vendor": "nvidia", "device": "H200", "description": "550.1", "backend_type": "Vulkan",
            "adapter_type": "DiscreteGPU"}
    fp = autotune.fingerprint(info, {"max-compute-workgroup-storage-size": 49152})
    assert fp["device"] == "H200" and fp["workgroup_storage"] == "49152"
    h = autotune.fingerprint_hash(fp)
    assert h == autotune.fingerprint_hash(dict(fp))
    for field, value in (("vendor", "amd"), ("device", "MI300"), ("description", "551.0"),
                         ("backend_type", "D3D12")):
        other = autotune.fingerprint({**info, field: value},
                                     {"max-compute-workgroup-storage-size": 49152})
        assert autotune.fingerprint_hash(other) != h
    assert autotune.fingerprint_hash(autotune.fingerprint(info, {})) != h


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(autotune.CACHE_ENV, str(tmp_path / "x"))
    assert autotune.cache_dir() == tmp_path / "x"
    monkeypatch.delenv(autotune.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert autotune.cache_dir() == tmp_path / "xdg" / "gputensor"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert autotune.cache_dir() == tmp_path / "home" / ".cache" / "gputensor"


def test_candidates(tuning, monkeypatch):
    be = get_backend()
    static = ops_gemm.plan_splitk(be, "f32", 256, 256, 4096, 1, None)
    cands = autotune.candidates(be, "f32", 256, 256, 4096, 1, static, ops_gemm.GEMM_PLANS)
    assert cands[0] == static and len(set(cands)) == len(cands)
    if be.context.is_software:
        assert len(cands) <= autotune.SOFTWARE_CANDIDATES
    monkeypatch.setattr(autotune, "SOFTWARE_CANDIDATES", 99)
    full = autotune.candidates(be, "f32", 256, 256, 4096, 1, static, ops_gemm.GEMM_PLANS)
    assert (ops_gemm.TILES_MEDIUM, 1) in full and (ops_gemm.TILES_LARGE, 8) in full
    # clamped: a shallow problem cannot split 8 ways (its depth has 2 BK tiles)
    shallow = autotune.candidates(be, "f32", 256, 256, 16, 1, (ops_gemm.TILES_LARGE, 1),
                                  ops_gemm.GEMM_PLANS)
    assert max(s for _, s in shallow) <= 2


# ---- tuning ------------------------------------------------------------------------------------
def test_tunes_once_per_key(tuning, tmp_path):
    gt.autotune(True)
    a, b = _operands(70, 90, 50)
    _check(_matmul(a, b), a, b)
    first = len(tuning)
    assert first >= 2  # the static plan and at least one alternative
    a2, b2 = _operands(100, 120, 60, seed=1)  # same buckets (128, 64, 128)
    _check(_matmul(a2, b2), a2, b2)
    _check(_matmul(a, b), a, b)
    assert len(tuning) == first
    a3, b3 = _operands(200, 90, 50, seed=2)  # n (column-major m) now 256: a new bucket
    _check(_matmul(a3, b3), a3, b3)
    assert len(tuning) == 2 * first
    records = autotune.entries(get_backend().context)
    assert len(records) == 2 and all(k.startswith("gemm/f32/") for k in records)
    rec = next(iter(records.values()))
    assert rec["ms"] > 0 and len(rec["times"]) == first


def test_explicit_splits_and_env_bypass_tuning(tuning, monkeypatch):
    be = get_backend()
    gt.autotune(True)
    a, b = _operands(40, 64, 30)
    ptrs = [be.alloc(x.nbytes) for x in (a, b)]
    for p, x in zip(ptrs, (a, b)):
        be.copy_htod(p, x)
    c = be.alloc(40 * 30 * 4)
    try:
        ops_gemm.gemm(be, "N", "N", 30, 40, 64, 1.0, ptrs[1], 30, ptrs[0], 64, 0.0, c, 30,
                      splits=2)
        monkeypatch.setenv(ops_gemm.SPLITK_ENV, "1")
        ops_gemm.gemm(be, "N", "N", 30, 40, 64, 1.0, ptrs[1], 30, ptrs[0], 64, 0.0, c, 30)
        got = np.empty((40, 30), np.float32)
        be.copy_dtoh(got, c)
    finally:
        for p in (*ptrs, c):
            be.free(p)
    _check(got, a, b)
    assert tuning == []


def _prefer_last(monkeypatch, timed):
    """Make ``time_plan`` report each candidate faster than the one before (the last wins),
    after really running it (the fixture's counting ``time_plan``, which records it); every
    candidate starts, however long compiling them takes (OpenGL's compiler on a loaded machine)."""
    real = autotune.time_plan
    monkeypatch.setattr(autotune, "BUDGET_S", math.inf)

    def fake(backend, request, ptrs, plan, reps, best):
        real(backend, request, ptrs, plan, reps, math.inf)
        return 1.0 / (len(timed) + 1), 1

    monkeypatch.setattr(autotune, "time_plan", fake)


def test_gemm_split_winner_is_correct(tuning, monkeypatch):
    monkeypatch.setattr(autotune, "SOFTWARE_CANDIDATES", 99)
    _prefer_last(monkeypatch, tuning)
    gt.autotune(True)
    a, b = _operands(48, 1024, 40, seed=3)  # deep: every split candidate stays legal
    _check(_matmul(a, b), a, b)
    (rec,) = autotune.entries(get_backend().context).values()
    assert rec["splits"] == tuning[-1][1] > 1
    _check(_matmul(a, b), a, b)  # the cached split plan again
    assert len(tuning) == len(rec["times"])


def test_gemm_strided_family(tuning):
    gt.autotune(True)
    a, b = _operands(60, 80, 50, seed=4)
    base = np.ascontiguousarray(np.stack([a, a])[:, :, ::-1].copy())
    view = gt.asarray(base)[0, ::-1, ::-1]  # negative strides: the general-stride kernel
    got = gt.asnumpy(view @ gt.asarray(b))
    _check(got, base[0, ::-1, ::-1], b)
    keys = list(autotune.entries(get_backend().context))
    assert len(keys) == 1 and keys[0].startswith("gemm_strided/f32/")


@pytest.mark.parametrize("in_shape,f_shape,stride,padding", [
    ((2, 16, 9, 9), (24, 16, 3, 3), 1, 1),
    ((3, 40, 7, 7), (16, 40, 1, 1), 1, 0),
])
def test_conv_tuned_correct(tuning, monkeypatch, in_shape, f_shape, stride, padding):
    monkeypatch.setattr(autotune, "SOFTWARE_CANDIDATES", 99)
    _prefer_last(monkeypatch, tuning)
    gt.autotune(True)
    be = get_backend()
    run_conv(be, in_shape, f_shape, stride, padding, leads=(1, 2, 3))
    (key, rec), = autotune.entries(be.context).items()
    assert key.startswith("conv2d/f32/") and f"{f_shape[2]}x{f_shape[3]}" in key
    count = len(tuning)
    assert count >= 2 and rec["splits"] == tuning[-1][1] > 1
    run_conv(be, in_shape, f_shape, stride, padding, seed=1)  # cached plan, new data
    assert len(tuning) == count


def test_busy_key_uses_static_plan(tuning):
    be = get_backend()
    gt.autotune(True)
    req = autotune.Request("gemm", "f32", ("NN",), (4, 4, 4), lambda ptrs: None)
    key = autotune.make_key("gemm", "f32", 8, 8, 8, 1, ("NN",))
    with autotune._lock:
        autotune._table(be.context).busy.add(key)
    static = (ops_gemm.TILES_MEDIUM, 1)
    assert autotune.tuned_plan(be, req, "f32", 8, 8, 8, 1, lambda: static, ops_gemm.GEMM_PLANS) is None
    assert tuning == []


def test_threads_share_one_tuning(tuning):
    gt.autotune(True)
    a, b = _operands(33, 70, 20, seed=5)
    errors = []

    def work():
        try:
            _check(_matmul(a, b), a, b)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(autotune.entries(get_backend().context)) == 1


# ---- persistence ---------------------------------------------------------------------------------
def test_cache_written_and_reloaded(tuning, tmp_path):
    gt.autotune(True)
    a, b = _operands(70, 90, 50)
    _check(_matmul(a, b), a, b)
    count = len(tuning)
    (path,) = _cache_files(tmp_path)
    data = json.loads(path.read_text())
    assert data["format"] == autotune.CACHE_VERSION
    assert data["fingerprint"]["device"] == str(get_backend().context.adapter_info.get("device"))
    assert len(data["entries"]) == 1
    assert not list(path.parent.glob(".autotune-*"))  # no temp file left behind
    autotune.reset()  # a fresh process, as far as the tuner knows
    _check(_matmul(a, b), a, b)
    assert len(tuning) == count  # loaded from disk, not re-tuned
    # a second key is merged into the same file
    a2, b2 = _operands(300, 90, 50, seed=1)
    _check(_matmul(a2, b2), a2, b2)
    assert len(json.loads(path.read_text())["entries"]) == 2


@pytest.mark.parametrize("garbage", ["{not json", '{"format": 999, "entries": {}}', "[]",
                                     '{"format": 1, "fingerprint": null, "entries": 3}'])
def test_corrupt_cache_ignored(tuning, tmp_path, garbage):
    gt.autotune(True)
    a, b = _operands(70, 90, 50)
    _check(_matmul(a, b), a, b)
    count = len(tuning)
    (path,) = _cache_files(tmp_path)
    path.write_text(garbage)
    autotune.reset()
    with pytest.warns(RuntimeWarning, match="corrupt"):
        _check(_matmul(a, b), a, b)
    assert len(tuning) == 2 * count  # tuned again
    assert len(json.loads(path.read_text())["entries"]) == 1  # and the file repaired


def test_bad_entries_skipped(tuning, tmp_path):
    gt.autotune(True)
    a, b = _operands(70, 90, 50)
    _check(_matmul(a, b), a, b)
    count = len(tuning)
    (path,) = _cache_files(tmp_path)
    data = json.loads(path.read_text())
    (key,) = data["entries"]
    data["entries"][key]["tiles"] = [3, 3, 3, 3, 3]  # not a usable configuration
    path.write_text(json.dumps(data))
    autotune.reset()
    _check(_matmul(a, b), a, b)
    assert len(tuning) == 2 * count


def test_unwritable_cache_dir(tuning, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(autotune.CACHE_ENV, str(blocker / "sub"))
    autotune.reset()
    gt.autotune(True)
    a, b = _operands(70, 90, 50)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        _check(_matmul(a, b), a, b)
    count = len(tuning)
    assert count >= 2
    _check(_matmul(a, b), a, b)  # kept in memory
    a2, b2 = _operands(300, 90, 50, seed=1)
    _check(_matmul(a2, b2), a2, b2)  # no second warning: persistence is off
    assert len(tuning) == 2 * count
