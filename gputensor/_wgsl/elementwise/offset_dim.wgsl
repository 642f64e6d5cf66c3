// offsets: coordinate D of i (the dim's extent in parameter word WORD).
    let c{{D}} = i32(rem % P({{WORD}}u));
    rem = rem / P({{WORD}}u);
