// The mixed vector mode: unit U of operand K's group (at b{{K}} OFFSET).
    let v{{K}}_{{U}} = in{{K}}[b{{K}}{{OFFSET}}];
