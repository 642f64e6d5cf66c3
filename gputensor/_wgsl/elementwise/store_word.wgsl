// The 'word' store of a packed output laid out contiguously: an invocation owns one u32 word of
// LANES lanes of LANE_BITS bits (MASK their mask) and builds it from the values (VALUE of
// element(o); BITS: the bits of v); a word partly outside the range keeps its other lanes.
    let first = P({{FIRST_WORD}}u);
    let w = first / {{LANES}}u + t;
    let words = (first % {{LANES}}u + n + {{LANES_M1}}u) / {{LANES}}u;
    if (t >= words) { return; }
    // a word wholly inside the range is built from scratch (no read of the output)
    let full = w * {{LANES}}u >= first && w * {{LANES}}u + {{LANES}}u - first <= n;
    var word = 0u;
    if (!full) { word = out[w]; }
    for (var lane = 0u; lane < {{LANES}}u; lane++) {
        let p = w * {{LANES}}u + lane;
        if (p < first || p - first >= n) { continue; }
        let o = offsets(p - first);
        let v = {{VALUE}};
        let sh = lane * {{LANE_BITS}}u;
        word = (word & ~({{MASK}}u << sh)) | ({{BITS}} << sh);
    }
    out[w] = word;
