// The 'direct' store: ELEMENTS elements per invocation, strided by the launched thread count so
// every load stays coalesced and several are in flight per thread (VALUE: the stored value of
// element(o), OUT_INDEX the output's index).
    let threads = nwg.x * nwg.y * {{WORKGROUP}}u;
    for (var j = 0u; j < {{ELEMENTS}}u; j++) {
        let i = t + j * threads;
        if (i >= n) { return; }
        let o = offsets(i);
        out[{{OUT_INDEX}}] = {{VALUE}};
    }
