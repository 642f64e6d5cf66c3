// offsets: operand slot SLOT's index at element 0 (parameter word WORD).
    var s{{SLOT}}: i32 = bitcast<i32>(P({{WORD}}u));
