// store_dst's body for a packed dst type: the element's lane (LANES lanes of BITS bits a word, MASK
// their mask) replaced by LANE_BITS, by atomicAnd/atomicOr (rows sharing a word never race).
    let sh = (i % {{LANES}}u) * {{BITS}}u;
    atomicAnd(&dst[i / {{LANES}}u], ~({{MASK}}u << sh));
    atomicOr(&dst[i / {{LANES}}u], {{LANE_BITS}} << sh);
