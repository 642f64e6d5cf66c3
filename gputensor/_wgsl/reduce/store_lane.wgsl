// store_dst's body for a packed destination: the element's lane (LANES lanes of WIDTH bits a word,
// SHIFT = log2(LANES), MASK their mask) replaced by BITS, by atomicAnd/atomicOr.
let sh = (i & {{LANE_MASK}}u) * {{WIDTH}}u;
    let w = i >> {{SHIFT}}u;
    atomicAnd(&dst[w], ~({{MASK}}u << sh));
    atomicOr(&dst[w], ({{BITS}}) << sh);
