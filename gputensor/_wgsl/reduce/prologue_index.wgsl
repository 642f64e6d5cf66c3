// fused_src: the row-major remainder of i, split over the dims (prologue_dim) below.
    var rem = i;
