// Hoisted part K of the output function: VALUE, constant along the row.
    let h{{K}} = {{VALUE}};
