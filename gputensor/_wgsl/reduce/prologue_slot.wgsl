// fused_src: input SLOT's offset at element 0 (parameter word WORD).
    var s{{SLOT}} = pro_w({{WORD}}u);
