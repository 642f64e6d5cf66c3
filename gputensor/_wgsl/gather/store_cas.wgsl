// store_b(o, v): stores the low bits of v as lane o of the packed destination b (LANES lanes of
// WIDTH bits a word, MASK their mask), by compare-and-swap (other points write the other lanes).
fn store_b(o: u32, v: vec2<u32>) {
    let w = o / {{LANES}}u;
    let sh = (o % {{LANES}}u) * {{WIDTH}}u;
    let m = {{MASK}}u << sh;
    let bits = (v.x & {{MASK}}u) << sh;
    var old = atomicLoad(&b[w]);
    loop {
        let res = atomicCompareExchangeWeak(&b[w], old, (old & ~m) | bits);
        if (res.exchanged) {
            break;
        }
        old = res.old_value;
    }
}
