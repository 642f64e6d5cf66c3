// Per unit of the lane (cached rows: VPT units, unrolled; u the unit's index).
    //#unroll
    for (var c = 0u; c < VPT; c++) {
        let u = c * TPR + t;
{{BODY}}
    }
