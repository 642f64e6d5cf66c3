// The vector mode's tail: element e of operand slot SLOT (its first element in parameter word WORD).
        let e{{SLOT}} = P({{WORD}}u) + e;
