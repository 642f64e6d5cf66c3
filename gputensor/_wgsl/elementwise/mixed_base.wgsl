// The mixed vector mode: the index of operand K's first unit of this invocation's group.
    let b{{K}} = {{BASE}};
