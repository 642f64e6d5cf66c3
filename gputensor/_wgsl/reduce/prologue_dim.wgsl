// fused_src: coordinate D of i (the dim's extent in parameter word WORD).
    let c{{D}} = rem % pro_w({{WORD}}u);
    rem = rem / pro_w({{WORD}}u);
