{{ENABLE}}
// Fused row operations (ops_rows.py): for each of `rows` rows of `n` elements, softmax,
// log_softmax, logsumexp, layer_norm or rms_norm, the statistics accumulated in T (f32 for
// float16 and float32, f64 for float64).
//
// A workgroup of WG = TPR * RPW invocations owns RPW rows, TPR invocations ("lanes") per row.
// Invocation lid has row slot (lid / R_STRIDE) % RPW and lane (lid / T_STRIDE) % TPR: rows whose
// elements are adjacent (step 1) put a row's lanes side by side (R_STRIDE = TPR, T_STRIDE = 1);
// strided rows put neighbouring rows side by side (R_STRIDE = 1, T_STRIDE = RPW), so that loads
// coalesce across rows. A row is read in units of 4 consecutive elements; lane t takes units t,
// t + TPR, t + 2 TPR, ... With CACHED the row's units stay in registers (VPT per lane) and the
// row is read once; otherwise it is streamed again for each statistic and for the output.
//
// Statistics are exact two-level sums: the max first, then sum(exp(x - max)) (softmax family);
// the mean first, then sum((x - mean)^2) (layer_norm); sum(x^2) (rms_norm). Each lane sums its
// units, then a two-level reduction over the row's lanes in workgroup memory combines the lane
// sums. A streamed row gets its statistics in one pass instead (softmax: a running max and
// rescaled sum per lane; layer_norm: per-lane counts, means and squared deviations merged with
// Chan's formulas), so it is read twice: once for them, once for the output.
//#include common

alias T = {{T}};

const OP: u32 = {{OP}}u;
//#include row_layout
const CACHED: bool = {{CACHED}};
// Units are loaded and stored as one vector (step 1, n and every row's first element index
// multiples of 4); otherwise element by element through x_step / y_step.
const VEC: bool = {{VEC}};
// Cached units are loaded and stored two at a time (8 consecutive elements, one 16-byte access
// of float16 data): lane t holds the unit pairs t, t + TPR, ... (VPT even, n and every row's
// first element multiples of 8).
const PAIR: bool = {{PAIR}};
const W_VEC: bool = {{W_VEC}};
// With PAIR: the float16 weight and bias are read 8 elements at a time as well (one 16-byte
// access each per unit pair; W and B are arrays of vec4<u32>).
const W_PAIR: bool = {{W_PAIR}};
const HAS_W: bool = {{HAS_W}};
const HAS_B: bool = {{HAS_B}};

const OP_SOFTMAX: u32 = 0u;
const OP_LOG_SOFTMAX: u32 = 1u;
const OP_LOGSUMEXP: u32 = 2u;
const OP_LAYER_NORM: u32 = 3u;
const OP_RMS_NORM: u32 = 4u;

// Element offsets and strides are u32 words holding i32 values: u32 arithmetic wraps, so
// negative strides work as long as the final index is in range (checked on the host).
struct Params {
    rows: u32,      // rows of this dispatch
    n: u32,         // elements per row
    units: u32,     // ceil(n / 4)
    rank: u32,      // row dims (1..4)
    x_first: u32,   // element index of this dispatch's row 0, element 0, in X's binding
    y_first: u32,
    w_first: u32,
    b_first: u32,
    x_step: u32,    // element stride along a row
    y_step: u32,
    eps_hi: f32,    // eps = eps_hi + eps_lo (in T)
    eps_lo: f32,
    shape: vec4<u32>,  // row dims, outermost first (the first `rank`)
    xs: vec4<u32>,     // their element strides in X
    ys: vec4<u32>,     // and in Y
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> X: array<{{XA}}>;
@group(0) @binding(2) var<storage, read_write> Y: array<{{YA}}>;
@group(0) @binding(3) var<storage, read> W: array<{{WA}}>;
@group(0) @binding(4) var<storage, read> B: array<{{WA}}>;

// ldx(i) / ldx4(i) / ldx8(i): element i / elements i..i+3 / i..i+7 of X as T; sty(i, v) /
// sty4(i, v) / sty8(i, p): store into Y; ldw(i), ldw4(i), ldw8(i), ldb(i), ldb4(i), ldb8(i): weight and bias.
{{LOADERS}}

// row_exp, row_log and the library functions they call.
{{MATH}}


fn neg_inf() -> T {
    return {{NEG_INF}};
}

// (X offset, Y offset) of row r, row-major over the row dims.
fn row_offsets(r: u32) -> vec2<u32> {
    var rem = r;
    var xo = 0u;
    var yo = 0u;
    for (var d = params.rank - 1u; d > 0u; d--) {
        let n = params.shape[d];
        let i = rem % n;
        rem = rem / n;
        xo += i * params.xs[d];
        yo += i * params.ys[d];
    }
    return vec2<u32>(xo + rem * params.xs[0], yo + rem * params.ys[0]);
}

struct Pair {
    lo: vec4<T>,
    hi: vec4<T>,
}

// The unit lane t caches in its slot c.
fn cached_unit(c: u32, t: u32) -> u32 {
    if (PAIR) {
        return ((c >> 1u) * TPR + t) * 2u + (c & 1u);
    }
    return c * TPR + t;
}

// Lanes of unit u that lie inside the row.
fn unit_mask(u: u32) -> vec4<bool> {
    if (VEC) {
        return vec4<bool>(true);
    }
    let j = 4u * u;
    let n = params.n;
    return vec4<bool>(j < n, j + 1u < n, j + 2u < n, j + 3u < n);
}

// Elements 4u..4u+3 of the row at xb (lanes past the row end: 0).
fn load_unit(xb: u32, u: u32) -> vec4<T> {
    let j = 4u * u;
    if (VEC) {
        return ldx4(xb + j);
    }
    let n = params.n;
    let s = params.x_step;
    var v = vec4<T>(T(0));
    if (j < n) { v.x = ldx(xb + j * s); }
    if (j + 1u < n) { v.y = ldx(xb + (j + 1u) * s); }
    if (j + 2u < n) { v.z = ldx(xb + (j + 2u) * s); }
    if (j + 3u < n) { v.w = ldx(xb + (j + 3u) * s); }
    return v;
}

fn store_unit(yb: u32, u: u32, v: vec4<T>) {
    let j = 4u * u;
    if (VEC) {
        sty4(yb + j, v);
        return;
    }
    let n = params.n;
    let s = params.y_step;
    if (j < n) { sty(yb + j * s, v.x); }
    if (j + 1u < n) { sty(yb + (j + 1u) * s, v.y); }
    if (j + 2u < n) { sty(yb + (j + 2u) * s, v.z); }
    if (j + 3u < n) { sty(yb + (j + 3u) * s, v.w); }
}

fn load_w(u: u32) -> vec4<T> {
    let j = 4u * u;
    if (W_VEC) {
        return ldw4(params.w_first + j);
    }
    let n = params.n;
    let f = params.w_first;
    return vec4<T>(ldw(f + select(0u, j, j < n)), ldw(f + select(0u, j + 1u, j + 1u < n)),
                   ldw(f + select(0u, j + 2u, j + 2u < n)), ldw(f + select(0u, j + 3u, j + 3u < n)));
}

fn load_b(u: u32) -> vec4<T> {
    let j = 4u * u;
    if (W_VEC) {
        return ldb4(params.b_first + j);
    }
    let n = params.n;
    let f = params.b_first;
    return vec4<T>(ldb(f + select(0u, j, j < n)), ldb(f + select(0u, j + 1u, j + 1u < n)),
                   ldb(f + select(0u, j + 2u, j + 2u < n)), ldb(f + select(0u, j + 3u, j + 3u < n)));
}

fn unit_max(v: vec4<T>, m: vec4<bool>) -> T {
    let w = select(vec4<T>(neg_inf()), v, m);
    return max(max(w.x, w.y), max(w.z, w.w));
}

fn unit_sum_exp(v: vec4<T>, m: vec4<bool>, shift: T) -> T {
    let e = vec4<T>(row_exp(v.x - shift), row_exp(v.y - shift), row_exp(v.z - shift), row_exp(v.w - shift));
    let w = select(vec4<T>(T(0)), e, m);
    return (w.x + w.y) + (w.z + w.w);
}

fn unit_sum(v: vec4<T>, m: vec4<bool>) -> T {
    let w = select(vec4<T>(T(0)), v, m);
    return (w.x + w.y) + (w.z + w.w);
}

fn unit_sum_sq(v: vec4<T>, m: vec4<bool>, shift: T) -> T {
    let d = select(vec4<T>(T(0)), v - vec4<T>(shift), m);
    return dot(d, d);
}

// The max (is_max) or the sum of `value` over the lanes of each row; every lane gets it.
// Two levels (3 barriers whatever TPR): lanes t < RB combine RA lane values each (lanes t * RA ..
// t * RA + RA - 1, in order), then every lane combines the RB partial results (in order).
// Called by every invocation of the workgroup (it holds barriers).
fn row_reduce(value: T, lid: u32, slot: u32, t: u32, is_max: bool) -> T {
    red[lid] = value;
    workgroupBarrier();
    let lane0 = lid - t * T_STRIDE;
    if (t < RB) {
        var acc = select(T(0), neg_inf(), is_max);
        //#unroll
        for (var a = 0u; a < RA; a++) {
            let b = red[lane0 + (t * RA + a) * T_STRIDE];
            acc = select(acc + b, max(acc, b), is_max);
        }
        part[slot * RB + t] = acc;
    }
    workgroupBarrier();
    var r = select(T(0), neg_inf(), is_max);
    //#unroll
    for (var b = 0u; b < RB; b++) {
        let p = part[slot * RB + b];
        r = select(r + p, max(r, p), is_max);
    }
    workgroupBarrier();
    return r;
}

// The output unit of input unit v (u its index) given the row's statistics a, b.
fn out_unit(v: vec4<T>, u: u32, a: T, b: T) -> vec4<T> {
    if (OP == OP_SOFTMAX) {
        let e = vec4<T>(row_exp(v.x - a), row_exp(v.y - a), row_exp(v.z - a), row_exp(v.w - a));
        return e / vec4<T>(b);
    }
    if (OP == OP_LOG_SOFTMAX) {
        return (v - vec4<T>(a)) - vec4<T>(b);
    }
    var y: vec4<T>;
    if (OP == OP_LAYER_NORM) {
        y = (v - vec4<T>(a)) * vec4<T>(b);
    } else {
        y = v * vec4<T>(b);
    }
    if (HAS_W) {
        y = y * load_w(u);
    }
    if (HAS_B) {
        y = y + load_b(u);
    }
    return y;
}

// The output units u, u + 1 (u even) of input units v0, v1: out_unit of each, the weight and
// bias read as one 8-element access each with W_PAIR.
fn out_pair(v0: vec4<T>, v1: vec4<T>, u: u32, a: T, b: T) -> Pair {
    if (!W_PAIR || OP < OP_LAYER_NORM) {
        return Pair(out_unit(v0, u, a, b), out_unit(v1, u + 1u, a, b));
    }
    var y0: vec4<T>;
    var y1: vec4<T>;
    if (OP == OP_LAYER_NORM) {
        y0 = (v0 - vec4<T>(a)) * vec4<T>(b);
        y1 = (v1 - vec4<T>(a)) * vec4<T>(b);
    } else {
        y0 = v0 * vec4<T>(b);
        y1 = v1 * vec4<T>(b);
    }
    if (HAS_W) {
        let w = ldw8(params.w_first + 4u * u);
        y0 = y0 * w.lo;
        y1 = y1 * w.hi;
    }
    if (HAS_B) {
        let c = ldb8(params.b_first + 4u * u);
        y0 = y0 + c.lo;
        y1 = y1 + c.hi;
    }
    return Pair(y0, y1);
}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let slot = (lid / R_STRIDE) % RPW;
    let t = (lid / T_STRIDE) % TPR;
    let row = linear_group(wid, nwg) * RPW + slot;
    let live = row < params.rows;
    // rows past the end have no units but still take part in the barriers
    let units = select(0u, params.units, live);
    let offs = row_offsets(select(0u, row, live));
    let xb = params.x_first + offs.x;
    let yb = params.y_first + offs.y;
    let count = T(params.n);

    var cache: array<vec4<T>, VPT>;
    if (CACHED) {
        //#unroll
        for (var c = 0u; c < VPT; c++) {
            let u = cached_unit(c, t);
            if (PAIR) {
                if ((c & 1u) == 0u && u < units) {
                    let p = ldx8(xb + 4u * u);
                    cache[c] = p.lo;
                    // (c + 1 < VPT here; the min keeps the unrolled dead branches' constant
                    // index in range, which Mesa's GLSL compiler requires)
                    cache[min(c + 1u, VPT - 1u)] = p.hi;
                }
            } else if (u < units) {
                cache[c] = load_unit(xb, u);
            }
        }
    }

    // statistics a (shift) and b (scale or offset) of the row
    var a = T(0);
    var b = T(0);
    let eps = T(params.eps_hi) + T(params.eps_lo);
    if (!CACHED && (OP == OP_SOFTMAX || OP == OP_LOG_SOFTMAX)) {
        // a streamed row: one statistics pass, a running (max, sum of exp(x - max)) per lane,
        // then the lane sums rescaled to the row max (-inf lanes hold only -inf: they add 0)
        var m = neg_inf();
        var sm = T(0);
        for (var u = t; u < units; u += TPR) {
            let v = load_unit(xb, u);
            let mk = unit_mask(u);
            let m_new = max(m, unit_max(v, mk));
            if (m_new != neg_inf()) {
                sm = sm * select(row_exp(m - m_new), T(1), m == m_new) + unit_sum_exp(v, mk, m_new);
            }
            m = m_new;
        }
        let row_max = row_reduce(m, lid, slot, t, true);
        let own = select(sm * select(row_exp(m - row_max), T(1), m == row_max), T(0), m == neg_inf());
        let total = row_reduce(own, lid, slot, t, false);
        a = row_max;
        b = select(total, row_log(total), OP == OP_LOG_SOFTMAX);
    } else if (!CACHED && OP == OP_LAYER_NORM) {
        // a streamed row: one statistics pass, each lane's (count, mean, squared deviations)
        // merged unit by unit (Chan et al.), then the lanes' merged over the row
        var cnt = T(0);
        var mean_t = T(0);
        var m2 = T(0);
        for (var u = t; u < units; u += TPR) {
            let v = load_unit(xb, u);
            let mk = unit_mask(u);
            let c = unit_sum(vec4<T>(T(1)), mk);
            let um = unit_sum(v, mk) / c;
            let um2 = unit_sum_sq(v, mk, um);
            let merged = cnt + c;
            let d = um - mean_t;
            mean_t = mean_t + d * (c / merged);
            m2 = m2 + um2 + d * d * (cnt * c / merged);
            cnt = merged;
        }
        let mean = row_reduce(cnt * mean_t, lid, slot, t, false) / count;
        let dm = mean_t - mean;
        let total = row_reduce(m2 + cnt * dm * dm, lid, slot, t, false);
        a = mean;
        b = T(1) / sqrt(total / count + eps);
    } else if (OP <= OP_LOGSUMEXP) {
        var mx = neg_inf();
        if (CACHED) {
            //#unroll
            for (var c = 0u; c < VPT; c++) {
                let u = cached_unit(c, t);
                if (u < units) {
                    mx = max(mx, unit_max(cache[c], unit_mask(u)));
                }
            }
        } else {
            for (var u = t; u < units; u += TPR) {
                mx = max(mx, unit_max(load_unit(xb, u), unit_mask(u)));
            }
        }
        let row_max = row_reduce(mx, lid, slot, t, true);
        // logsumexp shifts by a finite max only (an infinite one gives +-inf, not NaN)
        var shift = row_max;
        if (OP == OP_LOGSUMEXP && !(abs(row_max) < -neg_inf())) {
            shift = T(0);
        }
        var sm = T(0);
        if (CACHED) {
            //#unroll
            for (var c = 0u; c < VPT; c++) {
                let u = cached_unit(c, t);
                if (u < units) {
                    sm += unit_sum_exp(cache[c], unit_mask(u), shift);
                }
            }
        } else {
            for (var u = t; u < units; u += TPR) {
                sm += unit_sum_exp(load_unit(xb, u), unit_mask(u), shift);
            }
        }
        let total = row_reduce(sm, lid, slot, t, false);
        if (OP == OP_LOGSUMEXP) {
            if (live && t == 0u) {
                sty(yb, shift + row_log(total));
            }
            return;
        }
        a = shift;
        b = select(total, row_log(total), OP == OP_LOG_SOFTMAX);
    } else {
        var mean = T(0);
        if (OP == OP_LAYER_NORM) {
            var s1 = T(0);
            if (CACHED) {
                //#unroll
                for (var c = 0u; c < VPT; c++) {
                    let u = cached_unit(c, t);
                    if (u < units) {
                        s1 += unit_sum(cache[c], unit_mask(u));
                    }
                }
            } else {
                for (var u = t; u < units; u += TPR) {
                    s1 += unit_sum(load_unit(xb, u), unit_mask(u));
                }
            }
            mean = row_reduce(s1, lid, slot, t, false) / count;
        }
        var s2 = T(0);
        if (CACHED) {
            //#unroll
            for (var c = 0u; c < VPT; c++) {
                let u = cached_unit(c, t);
                if (u < units) {
                    s2 += unit_sum_sq(cache[c], unit_mask(u), mean);
                }
            }
        } else {
            for (var u = t; u < units; u += TPR) {
                s2 += unit_sum_sq(load_unit(xb, u), unit_mask(u), mean);
            }
        }
        let ms = row_reduce(s2, lid, slot, t, false) / count;
        a = mean;
        b = T(1) / sqrt(ms + eps);
    }

    if (CACHED) {
        //#unroll
        for (var c = 0u; c < VPT; c++) {
            let u = cached_unit(c, t);
            if (PAIR) {
                if ((c & 1u) == 0u && u < units) {
                    sty8(yb + 4u * u, out_pair(cache[c], cache[min(c + 1u, VPT - 1u)], u, a, b));
                }
            } else if (u < units) {
                store_unit(yb, u, out_unit(cache[c], u, a, b));
            }
        }
    } else {
        for (var u = t; u < units; u += TPR) {
            store_unit(yb, u, out_unit(load_unit(xb, u), u, a, b));
        }
    }
}
