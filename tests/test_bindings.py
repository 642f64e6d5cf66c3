"""Storage bindings: kernels declare what they only read ``var<storage, read>``, layouts follow
the declarations, and a dispatch that binds one buffer read-only and writable, or twice as
inputs, works on every WebGPU implementation (Dawn rejects a writable binding that overlaps
another one of its buffer)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gputensor as gt
from gputensor._backend import implementation, kernels
from gputensor._backend.errors import BackendError
from gputensor._backend.shader_bindings import READ, UNUSED, WRITE, storage_access, with_writable

_SOURCE = """
@group(0) @binding(0) var<uniform> p: vec4<u32>;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@binding(2) @group(0) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage> c: array<f32>;
@group(0) @binding(4) var<storage, read> placeholder: array<f32>;
// @group(0) @binding(5) var<storage, read_write> commented: array<f32>;
@compute @workgroup_size(1) fn main() { b[p.x] = a[p.x] + c[p.x]; }
"""

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_DECL = re.compile(r"var\s*<\s*storage\s*(?:,\s*(read_write|read)\s*)?>\s*([A-Za-z_]\w*)\s*:\s*([^;]*);")
_ASSIGN = re.compile(r"\s*(=(?!=)|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<=|>>=|\+\+|--)")


def _written(text: str, name: str) -> bool:
    """Whether ``text`` stores into ``name`` (an assignment to an element or member of it) or
    takes a pointer to it (``&name``: atomics, pointer arguments)."""
    for match in re.finditer(rf"(?<![\w.])((?<!&)&\s*\(?\s*)?\b{name}\b", text):
        if match.group(1):
            return True
        i = match.end()
        while True:  # past the element and member accesses
            while i < len(text) and text[i].isspace():
                i += 1
            if i < len(text) and text[i] == "[":
                depth = 0
                while True:
                    depth += {"[": 1, "]": -1}.get(text[i], 0)
                    i += 1
                    if depth == 0:
                        break
                continue
            member = re.match(r"\.\s*\w+", text[i:])
            if member is None:
                break
            i += member.end()
        if _ASSIGN.match(text, i):
            return True
    return False


def test_storage_access_follows_the_declarations() -> None:
    assert storage_access(_SOURCE, 5) == (READ, WRITE, READ, UNUSED, UNUSED)
    promoted = with_writable(_SOURCE, [1, 3])
    assert storage_access(promoted, 5) == (WRITE, WRITE, WRITE, UNUSED, UNUSED)
    assert "commented: array" in promoted
    with pytest.raises(ValueError, match="binding 4"):
        storage_access(_SOURCE, 3)


def test_every_template_declares_its_access() -> None:
    """No template or snippet leaves a storage binding's access to WGSL's default."""
    folder = kernels.importlib.resources.files("gputensor._wgsl")
    entries = [e for e in folder.iterdir() if e.name.endswith(".wgsl")]
    entries += [e for d in folder.iterdir() if d.is_dir() for e in d.iterdir() if e.name.endswith(".wgsl")]
    assert any(e.name == "binding_in.wgsl" for e in entries)
    for entry in entries:
        text = _COMMENT.sub("", entry.read_text())
        for access, name, _ in _DECL.findall(text):
            assert access, f"{entry.name}: declare {name} read or read_write"


def _exercise() -> None:
    """A call of each kernel family, so that their pipelines are compiled."""
    rng = np.random.default_rng(0)
    x = gt.asarray(rng.standard_normal(3000).astype(np.float32))
    m = gt.asarray(rng.standard_normal((40, 30)).astype(np.float32))
    idx = gt.asarray(np.array([3, 1, 2]))
    results = [gt.sum(x), gt.argmax(x), gt.var(x), gt.sort(x), gt.argsort(x), gt.cumulative_sum(x),
               m @ m.T, gt.exp(x) * x + 1.0, gt.take(x, idx), gt.searchsorted(gt.sort(x), x),
               gt.nn.softmax(m, axis=-1), gt.unique_values(gt.asarray([3, 1, 3])), x[x > 0]]
    for r in results:
        gt.asnumpy(r)


def test_compiled_kernels_write_every_read_write_binding(backend) -> None:
    """Every template kernel compiled in this session (by this test's calls and the tests before
    it) declares read_write only bindings it writes; the layout matches the declarations."""
    _exercise()
    ctx = backend.context
    variants = set(ctx._variants.values())  # (declared read_write for their dispatch's sake)
    checked = 0
    for pipe, info in list(ctx._pipeline_info.items()):
        try:
            kernels.template_source(info.name)
        except KeyError:  # a user kernel or a test's own source
            continue
        if pipe in variants:
            continue
        text = _COMMENT.sub("", info.source)
        for access, name, elem in _DECL.findall(text):
            used = len(re.findall(rf"\b{name}\b", text)) > 1  # (a variant may not use it)
            if access == "read_write" and "atomic" not in elem and used:
                assert _written(text, name), f"{info.name}: {name} is declared read_write and never written"
        assert info.writable == tuple(a == WRITE for a in info.access)
        checked += 1
    assert checked >= 10


def test_input_and_output_in_one_buffer(backend) -> None:
    """A dispatch reading one window of a buffer and writing another that does not overlap it
    binds the read window writable too (WebGPU forbids a buffer read-only and writable in one
    dispatch)."""
    from gputensor._backend.base import UnaryOp

    ctx = backend.context
    n = 1024  # two halves of 4 KiB: windows that do not overlap at any offset alignment
    p = backend.alloc(8 * n)
    backend.copy_htod(p, np.arange(2 * n, dtype=np.float32))
    before = set(ctx._variants)
    backend.unary(UnaryOp.NEG, p, p + 4 * n, n)
    out = np.empty(2 * n, np.float32)
    backend.copy_dtoh(out, p)
    np.testing.assert_array_equal(out, np.concatenate([np.arange(n), -np.arange(n)]).astype(np.float32))
    assert set(ctx._variants) - before or any(k[1] for k in before)
    backend.free(p)


@pytest.mark.parametrize("shape", [(4096,), (3, 1000)])
def test_in_place_updates(shape) -> None:
    """x op= y reads and writes one window (on Dawn: a copy of the input is read)."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal(shape).astype(np.float32)
    x, y = gt.asarray(base), gt.asarray(base[..., ::-1].copy())
    for _ in range(2):  # the second time from the bind-group cache
        x += y
        x *= 0.5
    expect = base.copy()
    for _ in range(2):
        expect += base[..., ::-1]
        expect *= np.float32(0.5)
    np.testing.assert_array_equal(gt.asnumpy(x), expect)


def test_a_source_bound_twice() -> None:
    """The vector path of a reduction binds its source as scalars and as vectors."""
    base = np.arange(4099, dtype=np.float32) % 7
    x = gt.asarray(base)
    assert float(gt.sum(x[1:])) == float(base[1:].sum())
    assert float(gt.max(x)) == 6.0


def test_backend_in_place_unary(backend) -> None:
    from gputensor._backend.base import UnaryOp

    n = 1000
    p = backend.alloc(4 * n)
    backend.copy_htod(p, -np.arange(n, dtype=np.float32))
    backend.unary(UnaryOp.ABS, p, p, n)
    out = np.empty(n, np.float32)
    backend.copy_dtoh(out, p)
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32))
    backend.free(p)


_TWO_WRITES = """
@group(0) @binding(0) var<uniform> p: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(1) fn main() { a[0] = 1u; b[1] = 2u; }
"""


def test_overlapping_writable_bindings(backend) -> None:
    """Two overlapping written windows of one buffer: recorded where the implementation allows
    it, a clear error where it does not (nothing is recorded then)."""
    ctx = backend.context
    buf = ctx.create_storage(1024)
    regions = [(buf, 0, 512), (buf, 0, 1024)]
    if implementation.WRITABLE_ALIASING_CHECKED:
        with pytest.raises(BackendError, match="overlapping windows"):
            ctx.dispatch("two_writes", [0, 0, 0, 0], regions, (1, 1, 1), source=_TWO_WRITES)
    else:
        ctx.dispatch("two_writes", [0, 0, 0, 0], regions, (1, 1, 1), source=_TWO_WRITES)
        assert np.frombuffer(ctx.readback(buf, 0, 8), np.uint32).tolist() == [1, 2]
