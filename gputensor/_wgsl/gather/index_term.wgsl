// Index array K's term of index_offset: its value at component C of `at`, negative ones counted
// from the end of the axis, times the axis' multiplier.
    var v{{K}} = idx{{K}}_load(at.{{C}});
    if (v{{K}} < 0i) { v{{K}} += bitcast<i32>(params.idx_n.{{C}}); }
    off += bitcast<u32>(v{{K}}) * params.idx_mul.{{C}};
