"""2-D convolution (NCHW cross-correlation with zero padding, as torch.nn.functional.conv2d
without bias, dilation 1, groups 1), in float16 (f32 accumulation), float32 and float64.

The kernel (``_wgsl/conv2d.wgsl`` on the shared ``gemm_core.wgsl``) is an implicit GEMM:
M = N*Oh*Ow output positions, N = K output channels, K = C*Fh*Fw filter taps; its A loader
gathers the input patches on the fly (no im2col buffer; each invocation steps its taps' channel,
filter row and column incrementally, ``tap_step``, instead of dividing per element), B is the
filter read in place as a column-major (C*Fh*Fw) x K matrix, and the epilogue scatters into NCHW.

When an operand does not fit one storage binding (``backend.max_window_bytes()``) the problem
is split (``plan_conv_blocks``) into blocks of images, output channels, input channels and
output rows; input-channel blocks after the first accumulate into the output.

A problem with few output tiles runs split-K exactly as gemm does (``gemm_splitk.gemm_plan``): each
tile's depth (input channels x filter taps) is shared out over several workgroups that store
partial tiles, and ``gemm_combine.wgsl`` sums them in a fixed order and scatters the sum into
NCHW (adding to the output for input-channel blocks after the first). With autotuning on
(``autotune``) the plan is tuned per filter size and stride as the ``conv2d`` family. The knob
``conv_tiles`` (GPUTENSOR_CONV_TILES) forces the tiles (``forced_tiles``); without it, 1x1
filters take the tiles of ``conv_1x1_tiles`` (GPUTENSOR_CONV_1X1_TILES, default 128x128x16x8x8:
on an H200 0.90x torch against 0.77x with the gemm planner's tiles) where they fit the adapter.

The checks and the pointer-free plan of a call (``_conv_static``, as a ``_ConvCall``) are kept
per backend by its plain arguments and the knobs they depend on (``_CONV_PLANS``); a repeated
call checks its pointers and replays its ``launch.LaunchProgram``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from . import autotune, config
from .errors import invalid_argument, unsupported
from .layout import Extent, block_starts, plan_blocks
from .launch import LaunchProgram, Region
from .plan_cache import PlanCache
from .gemm_splitk import (
    COMBINE_WG,
    KERNEL_COMBINE,
    SplitRecord,
    choose_splits,
    clamp_plan,
    combine_params,
    dispatch_gemm_records,
    plan_splitk,
    split_defines,
    split_depth,
    splitk_override,
)
from .gemm_tiling import FILL_TILES, GemmTiles, kernel_types
from .validate import check_int, check_pointer

#: Kernel name of the implicit-GEMM convolution template.
KERNEL = "conv2d"

Shape4 = tuple[int, int, int, int]


def _shape4(name: str, shape: Any) -> Shape4:
    if not isinstance(shape, Sequence) or isinstance(shape, str) or len(shape) != 4:
        raise invalid_argument(f"{name} must be a sequence of 4 integers, not {shape!r}")
    dims = tuple(check_int(f"{name}[{i}]", d) for i, d in enumerate(shape))
    if 0 in dims:
        raise invalid_argument(f"{name} {dims} is empty")
    return dims  # type: ignore[return-value]


def _pair(name: str, value: Any, minimum: int) -> tuple[int, int]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != 2:
            raise invalid_argument(f"{name} must be an integer or a pair, not {value!r}")
        return check_int(f"{name}[0]", value[0], minimum), check_int(f"{name}[1]", value[1], minimum)
    v = check_int(name, value, minimum)
    return v, v


def conv2d_output_shape(input_shape: Shape4, filter_shape: Shape4, stride: Any,
                        padding: Any) -> Shape4:
    """The [N, K, Oh, Ow] output of a convolution, Oh = (H + 2ph - Fh)//sh + 1.

    Raises BackendError (invalid argument) for malformed or empty shapes, a channel mismatch,
    non-positive strides, negative padding, or a filter larger than the padded input.
    """
    n, c, h, w = _shape4("input_shape", input_shape)
    k, fc, fh, fw = _shape4("filter_shape", filter_shape)
    sh, sw = _pair("stride", stride, 1)
    ph, pw = _pair("padding", padding, 0)
    if fc != c:
        raise invalid_argument(f"filter has {fc} input channels but the input has {c}")
    if fh > h + 2 * ph or fw > w + 2 * pw:
        raise invalid_argument(
            f"filter {fh}x{fw} is larger than the padded input {h + 2 * ph}x{w + 2 * pw}")
    return n, k, (h + 2 * ph - fh) // sh + 1, (w + 2 * pw - fw) // sw + 1


def conv_extents(input_shape: Shape4, filter_shape: Shape4, output_shape: Shape4,
                 stride: tuple[int, int]) -> tuple[Extent, Extent, Extent]:
    """Extents of input, filter and output over dimensions 'n' (images), 'k' (output
    channels), 'c' (input channels) and 'oh' (output rows). The input's row term is an upper
    bound: ohb output rows read at most (ohb-1)*sh + min(Fh, H) input rows."""
    _, c, h, w = input_shape
    k, _, fh, fw = filter_shape
    _, _, oh, ow = output_shape
    sh = stride[0]
    return (
        Extent(min(fh, h) * w, (("n", c * h * w), ("c", h * w), ("oh", sh * w))),
        Extent(fh * fw, (("k", c * fh * fw), ("c", fh * fw))),
        Extent(ow, (("n", k * oh * ow), ("k", oh * ow), ("oh", ow))),
    )


def plan_conv_blocks(input_shape: Shape4, filter_shape: Shape4, output_shape: Shape4,
                     stride: tuple[int, int], limit: int) -> dict[str, int]:
    """Block sizes {'n', 'k', 'c', 'oh'} so that every operand block spans at most ``limit``
    elements. Raises BackendError (unsupported) when even one output row cannot be bound."""
    sizes = {"n": input_shape[0], "k": filter_shape[0], "c": input_shape[1],
             "oh": output_shape[2]}
    try:
        return plan_blocks(sizes, conv_extents(input_shape, filter_shape, output_shape, stride),
                           limit)
    except ValueError as exc:
        raise unsupported(f"convolution operand too large for one storage binding: {exc}") from None


def _tiles_fit(backend: Any, acc_type: str, tiles: GemmTiles) -> bool:
    """Whether conv2d.wgsl runs ``tiles`` on this adapter: invocations a multiple of BM and within
    the workgroup size, staging within the workgroup memory."""
    limits = backend.context.limits
    return not (tiles.threads % tiles.bm
                or tiles.threads > int(limits.get("max-compute-invocations-per-workgroup", 256))
                or tiles.workgroup_bytes(8 if acc_type == "f64" else 4)
                > int(limits.get("max-compute-workgroup-storage-size", 16384)))


def forced_tiles(backend: Any, acc_type: str, m: int, k: int, depth: int,
                 splits: int | None) -> tuple[GemmTiles, int] | None:
    """The plan the ``conv_tiles`` knob (GPUTENSOR_CONV_TILES) forces for an M x K implicit GEMM
    of the given depth, None when it is unset: its tiles, split-K as ``gemm_splitk.gemm_plan``
    chooses it for large tiles (``splits`` or the ``gemm_splitk`` knob when given), clamped.
    BackendError (invalid argument) for tiles the kernel cannot run or that do not fit the
    adapter's workgroup memory or size."""
    shape = config.value("conv_tiles")
    if shape is None:
        return None
    tiles = GemmTiles(*shape)
    try:
        tiles.check()
    except ValueError as exc:
        raise invalid_argument(f"GPUTENSOR_CONV_TILES: {exc}") from None
    if not _tiles_fit(backend, acc_type, tiles):
        raise invalid_argument(f"GPUTENSOR_CONV_TILES: {tiles} needs invocations a multiple of BM, within the "
                               "adapter's workgroup size and memory")
    return _split_plan(backend, acc_type, m, k, depth, splits, tiles)


def pointwise_tiles(backend: Any, acc_type: str, m: int, k: int, depth: int,
                    splits: int | None) -> tuple[GemmTiles, int] | None:
    """The plan of a 1x1 filter's implicit GEMM from the ``conv_1x1_tiles`` knob: its tiles with
    split-K as ``forced_tiles`` chooses it, or None when the knob is ``auto`` or its tiles are not
    ones this adapter runs (then the gemm planner's)."""
    shape = config.value("conv_1x1_tiles")
    if shape is None:
        return None
    tiles = GemmTiles(*shape)
    try:
        tiles.check()
    except ValueError:
        return None
    if not _tiles_fit(backend, acc_type, tiles):
        return None
    return _split_plan(backend, acc_type, m, k, depth, splits, tiles)


def _split_plan(backend: Any, acc_type: str, m: int, k: int, depth: int, splits: int | None,
                tiles: GemmTiles) -> tuple[GemmTiles, int]:
    """``tiles`` with split-K as ``gemm_splitk.gemm_plan`` chooses it for large tiles (``splits``
    or the ``gemm_splitk`` knob when given), clamped."""
    ctx = backend.context
    if splits is None:
        splits = splitk_override()
    if splits is None:
        count = -(-m // tiles.bm) * -(-k // tiles.bn)
        gpu_f32 = not ctx.is_software and acc_type != "f64"
        splits = choose_splits(count, depth) if gpu_f32 and count < FILL_TILES else 1
    return clamp_plan(backend, acc_type, m, k, depth, 1, tiles, max(1, int(splits)))


def conv_plan(backend: Any, acc_type: str, m: int, k: int, depth: int,
              splits: int | None = None,
              tune: autotune.Request | None = None, pointwise: bool = False) -> tuple[GemmTiles, int]:
    """``(tiles, splits)`` for an M x K implicit GEMM of the given depth (C*Fh*Fw of a block):
    the ``conv_tiles`` knob's (``forced_tiles``) where set, else for a 1x1 filter (``pointwise``,
    not autotuned) the ``conv_1x1_tiles`` knob's where they fit (``pointwise_tiles``), else
    ``gemm_splitk.plan_splitk`` (autotuned with a ``tune`` request), checked for conv2d's loader (NT
    must be a multiple of BM)."""
    forced = None
    if autotune.forced_plan() is None:
        forced = forced_tiles(backend, acc_type, m, k, depth, splits)
        if forced is None and pointwise and tune is None:
            forced = pointwise_tiles(backend, acc_type, m, k, depth, splits)
    tiles, splits = forced if forced is not None else plan_splitk(backend, acc_type, m, k, depth, 1, splits,
                                                                  tune=tune)
    if tiles.threads % tiles.bm:
        raise AssertionError(f"conv2d needs threads % BM == 0, got {tiles}")
    return tiles, splits


def tap_step(d: int, fh: int, fw: int, in_plane: int, w: int) -> tuple[int, int, int]:
    """A depth step of ``d`` taps as conv2d.wgsl's Tap: (window offset c*in_plane + fr*w + fc,
    fr, fc) of depth index d (channel c, filter row fr < fh, filter column fc < fw)."""
    c, r = divmod(d, fh * fw)
    fr, fc = divmod(r, fw)
    return (c * in_plane + fr * w + fc) & 0xFFFFFFFF, fr, fc


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of exact ints, strs, None and tuples of them only (an equal
    key then means an identical call)."""
    t = type(value)
    if t is tuple:
        return all(_plain(v) for v in value)
    return value is None or t is int or t is str


def _conv_static(backend: Any, input_shape: Any, filter_shape: Any, output_shape: Any, stride: Any, padding: Any,
                 dtype: str, splits: int | None) -> tuple[Any, ...]:
    """The checks and the pointer-free plan of ``conv2d_forward``: (input, filter and output
    shapes, stride, padding, item size, blocks, kernel types, tiles, splits, defines).
    BackendError as ``conv2d_forward`` says."""
    in_shape = _shape4("input_shape", input_shape)
    f_shape = _shape4("filter_shape", filter_shape)
    out_shape = _shape4("output_shape", output_shape)
    expected = conv2d_output_shape(in_shape, f_shape, stride, padding)
    if out_shape != expected:
        raise invalid_argument(f"output_shape {out_shape} does not match the expected {expected}")
    sh, sw = _pair("stride", stride, 1)
    ph, pw = _pair("padding", padding, 0)
    itemsize, wgsl_type = backend.float_dtype(dtype)
    n, c, h, w = in_shape
    k, _, fh, fw = f_shape
    _, _, oh, ow = out_shape
    limit = backend.max_window_bytes() // itemsize
    blocks = plan_conv_blocks(in_shape, f_shape, out_shape, (sh, sw), limit)
    types = kernel_types(wgsl_type)
    acc_type = types["ACC"]
    ff = fh * fw
    tune = None
    if splits is None and autotune.enabled():
        def run(ptrs: Sequence[int]) -> None:
            conv2d_forward(backend, ptrs[0], in_shape, ptrs[1], f_shape, ptrs[2], out_shape,
                           (sh, sw), (ph, pw), dtype=dtype)

        tune = autotune.Request("conv2d", wgsl_type, (f"{fh}x{fw}", f"s{sh}x{sw}"),
                                (n * c * h * w * itemsize, k * c * fh * fw * itemsize,
                                 n * k * oh * ow * itemsize), run)
    tiles, splits = conv_plan(backend, acc_type, blocks["n"] * blocks["oh"] * ow, blocks["k"],
                              blocks["c"] * ff, splits, tune, pointwise=ff == 1)
    defines = {**types, **tiles.defines(), **split_defines(types, splits > 1)}
    return in_shape, f_shape, out_shape, (sh, sw), (ph, pw), itemsize, blocks, types, tiles, splits, defines


#: Per backend: the plain arguments of a ``conv2d_forward`` call but its pointers, then the
#: split-K and tile knobs -> its ``_ConvCall`` (not kept while autotuning).
_CONV_PLANS = PlanCache(256)


def conv2d_forward(backend: Any, input: int, input_shape: Shape4, filter: int,
                   filter_shape: Shape4, output: int, output_shape: Shape4,
                   stride: tuple[int, int] | int, padding: tuple[int, int] | int,
                   *, dtype: str = "float32", splits: int | None = None) -> None:
    """``output = conv2d(input, filter)``: NCHW input [N,C,H,W], filter [K,C,Fh,Fw], output
    [N,K,Oh,Ow], cross-correlation with zero padding (torch.nn.functional.conv2d semantics).

    A call is planned once per call structure (everything but the pointers, kept per backend
    unless autotuning) and replayed as a ``LaunchProgram`` (split-K partials in a scratch buffer
    the program allocates, then the combine).

    Raises BackendError: invalid argument for malformed, empty or inconsistent shapes (channel
    mismatch, output shape not the one stride and padding give), non-positive stride, negative
    padding, an unknown dtype, or a pointer that is unknown, freed, misaligned or too short for
    its tensor; unsupported when the adapter lacks the dtype. Nothing is recorded unless every
    check passes. ``splits`` forces the number of split-K slices (1: none), as in
    ``ops_gemm.gemm``.
    """
    key = None
    if not autotune.enabled() and autotune.forced_plan() is None:
        key = (input_shape, filter_shape, output_shape, stride, padding, dtype, splits, splitk_override(),
               config.value("conv_tiles"), config.value("conv_1x1_tiles"), backend.max_window_bytes())
        if not _plain(key):
            key = None
    plans = _CONV_PLANS.of(backend)
    call = plans.get(key) if key is not None else None
    if call is not None:
        backend.float_dtype(dtype)  # (the adapter's dtypes: BackendError unsupported)
    else:
        call = _ConvCall(*_conv_static(backend, input_shape, filter_shape, output_shape, stride, padding, dtype,
                                       splits))
        if key is not None:
            _CONV_PLANS.keep(plans, key, call)
    call.launch(backend, input, filter, output, replay=key is not None)


#: Parameter words of conv2d.wgsl; its window words (input, filter, output first elements).
_CONV_WORDS = struct.Struct("<37I")
_IN_FIRST, _F_FIRST, _OUT_FIRST = 4, 5, 6
#: Parameters of gemm_combine.wgsl per accumulation type; its output window word.
_COMBINE_WORDS = {"f32": struct.Struct("<ff10I"), "f64": struct.Struct("<dd10I")}
_COMBINE_C_FIRST = 6


def _no_placeholder(backend: Any, nbytes: int, *bindings: Any) -> Any:  # pragma: no cover
    raise AssertionError("conv2d programs bind no placeholders")


class _ConvCall:
    """A checked ``conv2d_forward`` call but its pointers (``_conv_static``'s plan) and its launch
    program (compiled on first replay, per context)."""

    def __init__(self, in_shape: Shape4, f_shape: Shape4, out_shape: Shape4, stride: tuple[int, int],
                 padding: tuple[int, int], itemsize: int, blocks: dict[str, int], types: dict[str, str],
                 tiles: GemmTiles, splits: int, defines: dict[str, Any]) -> None:
        self.in_shape, self.f_shape, self.out_shape = in_shape, f_shape, out_shape
        self.stride, self.padding, self.itemsize = stride, padding, itemsize
        self.blocks, self.types, self.tiles, self.splits, self.defines = blocks, types, tiles, splits, defines
        n, c, h, w = in_shape
        k, _, fh, fw = f_shape
        _, _, oh, ow = out_shape
        self.spans = (n * c * h * w * itemsize, k * c * fh * fw * itemsize, n * k * oh * ow * itemsize)
        self.program: LaunchProgram | None = None
        self.program_ctx: Any = None

    def records(self, ctx: Any) -> list[tuple[list[int], tuple[Region, Region, Region], tuple[int, int, int],
                                              tuple[Any, ...] | None]]:
        """Every dispatch, pointer-free: conv2d.wgsl's words (window words 0), the regions of
        input (0), filter (1) and output (2), the grid, and for split-K (n_split, partial values
        per split, the combine's words with its output window word 0)."""
        (n, c, h, w), (k, _, fh, fw), (_, _, oh, ow) = self.in_shape, self.f_shape, self.out_shape
        (sh, sw), (ph, pw), itemsize, blocks, tiles = self.stride, self.padding, self.itemsize, self.blocks, self.tiles
        acc_type = self.types["ACC"]
        ff = fh * fw
        chw, hw = c * h * w, h * w
        koo, oo = k * oh * ow, oh * ow
        rows_step = tiles.threads // tiles.bm  # conv2d.wgsl's A_ROWS_STEP
        out = []
        for n0, nb in block_starts(n, blocks["n"]):
            for r0, ohb in block_starts(oh, blocks["oh"]):
                ih_lo = max(0, r0 * sh - ph)
                ih_hi = min(h, (r0 + ohb - 1) * sh - ph + fh)
                rows_in = max(ih_hi - ih_lo, 1)
                for k0, kb in block_starts(k, blocks["k"]):
                    out_reg = Region(2, (n0 * koo + k0 * oo + r0 * ow) * itemsize,
                                     ((nb - 1) * koo + (kb - 1) * oo + ohb * ow) * itemsize, itemsize, 0,
                                     _OUT_FIRST, 0)
                    for ci, (c0, cb) in enumerate(block_starts(c, blocks["c"])):
                        in_reg = Region(0, (n0 * chw + c0 * hw + min(ih_lo, h - 1) * w) * itemsize,
                                        ((nb - 1) * chw + (cb - 1) * hw + rows_in * w) * itemsize, itemsize, 0,
                                        _IN_FIRST, 0)
                        f_reg = Region(1, (k0 * c * ff + c0 * ff) * itemsize,
                                       ((kb - 1) * c * ff + cb * ff) * itemsize, itemsize, 0, _F_FIRST, 0)
                        m = nb * ohb * ow
                        tiles_m = -(-m // tiles.bm)
                        tiles_n = -(-kb // tiles.bn)
                        in_plane = hw if cb > 1 else 0
                        out_img = koo if nb > 1 else 0
                        out_plane = oo if kb > 1 else 0
                        n_split, kt_split = split_depth(cb * ff, tiles.bk, self.splits)
                        words = [
                            1 if ci else 0, m, kb, cb * ff,
                            0, 0, 0,
                            chw if nb > 1 else 0, in_plane, h, w,
                            min(ih_lo, h - 1) & 0xFFFFFFFF,
                            fh, fw, ff, sh, sw, ph, pw, ohb, ow, r0,
                            c * ff if kb > 1 else 0, out_img, out_plane,
                            tiles_m, tiles_n, n_split, kt_split,
                            *tap_step(tiles.bk, fh, fw, in_plane, w),
                            *tap_step(rows_step, fh, fw, in_plane, w),
                            (w - fw) & 0xFFFFFFFF, (in_plane - fh * w) & 0xFFFFFFFF,
                        ]
                        split = None
                        if self.splits > 1:
                            split = (n_split, m * kb, (1.0, 1.0 if ci else 0.0, m * kb, n_split, m, kb, 0, 1,
                                                       out_plane, 0, ohb * ow, out_img))
                        out.append((words, (in_reg, f_reg, out_reg), ctx.fold_grid(tiles_m * tiles_n * n_split),
                                    split))
        return out

    def launch(self, backend: Any, input: int, filter: int, output: int, replay: bool = True) -> None:
        """Check the pointers (BackendError as ``conv2d_forward`` says) and record the call:
        its program replayed (``replay``), else through ``record_reference``."""
        itemsize = self.itemsize
        ranges = [check_pointer(backend, name, ptr, span, itemsize)
                  for name, ptr, span in (("input", input, self.spans[0]), ("filter", filter, self.spans[1]),
                                          ("output", output, self.spans[2]))]
        ctx = backend.context
        if (not replay or ctx.__dict__.get("dispatch") is not None
                or not all(type(p) is int for p in (input, filter, output))):
            self.record_reference(backend, (input, filter, output))
            return
        program = self.program
        if program is None or not program.valid_for(ctx) or self.program_ctx is not ctx:
            program = self.program = self._compile(ctx)
            self.program_ctx = ctx
        bases = [(alloc.buffer, alloc.buffer.size, alloc.nbytes, off, ptr, alloc.whole)
                 for (alloc, off), ptr in zip(ranges, (input, filter, output))]
        if not program.run(backend, ctx, bases, _no_placeholder):
            self.record_reference(backend, (input, filter, output))

    def _compile(self, ctx: Any) -> LaunchProgram:
        """The launch program (operands 0 input, 1 filter, 2 output, 3 the split-K partials)."""
        types = self.types
        acc_type = types["ACC"]
        acc_size = 8 if acc_type == "f64" else 4
        pipe = ctx.pipeline(KERNEL, 3, self.defines)
        combine_defines = {"ENABLE": types["ENABLE"], "T": types["T"], "ACC": acc_type}
        records: list[tuple[Any, ...]] = []
        need = 0
        for words, (in_reg, f_reg, out_reg), grid, split in self.records(ctx):
            if split is None:
                records.append((pipe, self.defines, words, grid, [in_reg, f_reg, out_reg]))
                continue
            n_split, count, combine_words = split
            need = max(need, n_split * count)
            part = Region(3, 0, n_split * count * acc_size, acc_size, 0, 0, 0)
            records.append((pipe, self.defines, words, grid, [in_reg, f_reg, part]))
            records.append((ctx.pipeline(KERNEL_COMBINE, 2, combine_defines), combine_defines, combine_words,
                            ctx.fold_grid(-(-count // COMBINE_WG)), [part, out_reg._replace(word=_COMBINE_C_FIRST)],
                            KERNEL_COMBINE, _COMBINE_WORDS[acc_type]))
        return LaunchProgram.compile(KERNEL, _CONV_WORDS, ctx, records, [(need * acc_size, 0)] if need else [])

    def record_reference(self, backend: Any, ptrs: tuple[int, int, int]) -> None:
        """Record the call through ``WgpuContext.dispatch`` (windows from ``backend.window``):
        the path a dispatch wrapper (profiler, test spy) and the autotuner see."""
        itemsize, acc_type = self.itemsize, self.types["ACC"]
        dispatches = []
        for words, regions, grid, split in self.records(backend.context):
            wins = [backend.window(ptrs[r.base] + r.offset, r.nbytes, itemsize) for r in regions]
            patched = list(words)
            for r, win in zip(regions, wins):
                patched[r.word] = win.first
            combine = None
            if split is not None:
                n_split, count, cw = split
                combine = SplitRecord(n_split, count, combine_params(
                    acc_type, cw[0], cw[1], cw[4], cw[5], 1, n_split, wins[2].first, *cw[7:]))
            dispatches.append((_CONV_WORDS.pack(*patched), [win.binding for win in wins], grid, combine))
        dispatch_gemm_records(backend, KERNEL, self.types, self.defines, dispatches)


__all__ = ["conv2d_forward", "conv2d_output_shape", "conv_extents", "conv_plan", "forced_tiles",
           "plan_conv_blocks", "pointwise_tiles", "tap_step"]
