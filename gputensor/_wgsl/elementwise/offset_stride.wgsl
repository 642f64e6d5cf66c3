// offsets: operand slot SLOT's index along dim D (its stride, i32 bits, in parameter word WORD).
    s{{SLOT}} += c{{D}} * bitcast<i32>(P({{WORD}}u));
