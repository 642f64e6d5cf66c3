// The vector modes: this invocation's vector (or word group) of array operand K (its first element
// in parameter word WORD, WIDTH elements a vector).
    let v{{K}} = in{{K}}[P({{WORD}}u) / {{WIDTH}}u + t];
