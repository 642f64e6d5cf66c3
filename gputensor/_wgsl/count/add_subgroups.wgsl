// add(live, bucket, sgs, lane): counts a live element in its bucket of the histogram; up to PEEL
// rounds merge the lanes of a subgroup that share a bucket into one atomic add (few distinct
// values per subgroup).
fn add(live: bool, bucket: u32, sgs: u32, lane: u32) {
    var pending = live;
    for (var round = 0u; round < min(PEEL, sgs); round++) {
        let waiting = subgroupBallot(pending);
        if (all(waiting == vec4<u32>(0u))) {
            break;  // uniform: the ballot is the same in every lane
        }
        let b = subgroupShuffle(bucket, first_lane(waiting));
        let mine = pending && bucket == b;
        let group = subgroupBallot(mine);
        if (mine && popcount4(group & lanes_below(lane)) == 0u) {
            atomicAdd(&hist[params.hist_first + b], popcount4(group));
        }
        if (mine) {
            pending = false;
        }
    }
    if (pending) {
        atomicAdd(&hist[params.hist_first + bucket], 1u);
    }
}
