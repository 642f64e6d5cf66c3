// add(live, bucket): counts a live element in its bucket of the histogram.
fn add(live: bool, bucket: u32) {
    if (live) {
        atomicAdd(&hist[params.hist_first + bucket], 1u);
    }
}
