// The 'atomic' store of a packed output with arbitrary strides: the element's lane (LANES lanes
// of LANE_BITS bits a word, MASK their mask) replaced by BITS (of v, VALUE of element(o)) with
// atomicAnd/atomicOr.
    if (t >= n) { return; }
    let o = offsets(t);
    let v = {{VALUE}};
    let p = {{OUT_INDEX}};
    let sh = (p % {{LANES}}u) * {{LANE_BITS}}u;
    atomicAnd(&out[p / {{LANES}}u], ~({{MASK}}u << sh));
    atomicOr(&out[p / {{LANES}}u], {{BITS}} << sh);
