// fused_src: operand K of the prologue's expression (VALUE: its load from the dtype table).
    let x{{K}} = {{VALUE}};
