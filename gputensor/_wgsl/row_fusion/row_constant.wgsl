// An operand constant along the row: one load per row.
    let r{{A}} = ld{{A}}(o{{A}});
