// fused_src: the prologue's expression EXPR (of the op table).
    return {{EXPR}};
