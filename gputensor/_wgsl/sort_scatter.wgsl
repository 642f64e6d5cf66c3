// Radix sort, step 3 of a pass, ranking with two 4-bit counting sorts: the kernel for adapters
// without subgroups (the shared steps and the output modes: sort_scatter_common.wgsl; the
// subgroup kernel: sort_scatter_sg.wgsl).
//
// Invocation l holds tile positions l * ITEMS .. l * ITEMS + ITEMS - 1 (blocked, in order).
// Step 2 sorts the tile by the digit in workgroup memory with two stable 4-bit counting sorts
// (low nibble, then high nibble). Each is deterministic: a 16 x WG matrix of per-invocation
// nibble counts (nibble-major) is scanned exclusively, which ranks every element after all
// elements of smaller nibbles and after the equal-nibble elements of earlier invocations and of
// its own earlier items -- i.e. in input order, so the sort is stable. The counting matrix
// shares workgroup memory with the tile (the elements are in registers while it is used), so
// SMEM = max(TPAD * (KW + HAS_VALS), 16 * WG + WG). The digit starts lstart are then found in the
// sorted tile.
//#include sort_scatter_common

var<workgroup> part: array<u32, WG>;

// padded count-matrix index (one spare word per 16), so that the per-invocation (stride 16)
// accesses avoid bank conflicts
fn cp(q: u32) -> u32 {
    return q + (q >> 4u);
}

// exclusive scan of part[0..WG) in place; returns the total (all invocations call it)
fn scan_part(lid: u32) -> u32 {
    for (var off = 1u; off < WG; off = off << 1u) {
        var v = part[lid];
        if (lid >= off) {
            v += part[lid - off];
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
    return part[WG - 1u];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = linear_group(wid, nwg);
    if (g >= params.rows * params.ntd) {
        return;
    }
    let tl = tile_of(g);

    // 1. blocked load
    var keys: array<vec2<u32>, ITEMS>;
    var vals: array<u32, ITEMS>;
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let e = load_elem(tl, lid * ITEMS + j);
        keys[j] = e.k;
        vals[j] = e.v;
    }

    // 2. two stable 4-bit counting sorts in workgroup memory
    for (var step = 0u; step < 2u; step++) {
        let nshift = params.shift + 4u * step;
        for (var d = 0u; d < 16u; d++) {
            smem[cp(d * WG + lid)] = 0u;
        }
        //#unroll
        for (var j = 0u; j < ITEMS; j++) {
            let nib = digit(keys[j], nshift) & 15u;
            smem[cp(nib * WG + lid)] += 1u;
        }
        workgroupBarrier();
        // exclusive scan of the 16 x WG matrix (nibble-major): invocation l owns 16 entries
        var s = 0u;
        for (var e = 0u; e < 16u; e++) {
            s += smem[cp(lid * 16u + e)];
        }
        part[lid] = s;
        workgroupBarrier();
        scan_part(lid);
        var pre = 0u;
        if (lid > 0u) {
            pre = part[lid - 1u];
        }
        for (var e = 0u; e < 16u; e++) {
            let c = smem[cp(lid * 16u + e)];
            smem[cp(lid * 16u + e)] = pre;
            pre += c;
        }
        workgroupBarrier();
        var pos: array<u32, ITEMS>;
        //#unroll
        for (var j = 0u; j < ITEMS; j++) {
            let nib = digit(keys[j], nshift) & 15u;
            let q = cp(nib * WG + lid);
            pos[j] = smem[q];
            smem[q] = pos[j] + 1u;
        }
        workgroupBarrier();
        //#unroll
        for (var j = 0u; j < ITEMS; j++) {
            put_elem(pos[j], keys[j], vals[j]);
        }
        workgroupBarrier();
        if (step == 0u) {
            //#unroll
            for (var j = 0u; j < ITEMS; j++) {
                let p = lid * ITEMS + j;
                keys[j] = tile_key(p);
                if (HAS_VALS) {
                    vals[j] = smem[VAL_OFF + tp(p)];
                }
            }
            workgroupBarrier();
        }
    }

    // 3. digit starts (local, found in the sorted tile, and global), then the striped write
    //#unroll
    for (var j = 0u; j < ITEMS; j++) {
        let p = j * WG + lid;
        let d = digit(tile_key(p), params.shift);
        if (p == 0u || digit(tile_key(p - 1u), params.shift) != d) {
            lstart[d] = p;
        }
    }
    load_gstart(tl, lid);
    workgroupBarrier();
    write_tile(tl, lid);
}
