// offsets: coordinate 0 of i.
    let c0 = i32(rem);
