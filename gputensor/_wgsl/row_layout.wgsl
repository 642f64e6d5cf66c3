// The row layout of row_ops.wgsl and row_fusion.wgsl (included after `alias T`): a workgroup of
// WG = TPR * RPW invocations owns RPW rows, TPR lanes per row; VPT cached units per lane; the
// workgroup memory of their two-level row reductions (row_reduce).
const TPR: u32 = {{TPR}}u;
const RPW: u32 = {{RPW}}u;
const WG: u32 = {{WG}}u;
const T_STRIDE: u32 = {{T_STRIDE}}u;
const R_STRIDE: u32 = {{R_STRIDE}}u;
const VPT: u32 = {{VPT}}u;
// row_reduce: RB partial results of RA lanes each (RA * RB = TPR)
const RA: u32 = {{RA}}u;
const RB: u32 = {{RB}}u;

var<workgroup> red: array<T, WG>;
var<workgroup> part: array<T, RPW * RB>;
