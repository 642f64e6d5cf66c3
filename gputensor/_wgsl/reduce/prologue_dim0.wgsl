// fused_src: coordinate 0 of i.
    let c0 = rem;
