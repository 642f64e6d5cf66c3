// fused_src: input SLOT's offset along dim D (its stride in parameter word WORD).
    s{{SLOT}} += c{{D}} * pro_w({{WORD}}u);
