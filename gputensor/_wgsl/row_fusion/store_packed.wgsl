// st{{A}}(i, v): stores v (of COMPUTE) as lane i of the packed slot A (LANES lanes of BITS bits a word,
// MASK their mask; LANE: v's bits) with atomicAnd/atomicOr.
fn st{{A}}(i: u32, v: {{COMPUTE}}) {
    let sh = (i % {{LANES}}u) * {{BITS}}u;
    atomicAnd(&A{{A}}[i / {{LANES}}u], ~({{MASK}}u << sh));
    atomicOr(&A{{A}}[i / {{LANES}}u], {{LANE}} << sh);
}
