// offsets: the row-major remainder of i, split over the dims (offset_dim) below.
    var rem = i;
