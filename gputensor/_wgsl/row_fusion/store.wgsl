// st{{A}}(i, v): stores v (of COMPUTE) as element i of slot A (of ARRAY).
fn st{{A}}(i: u32, v: {{COMPUTE}}) { A{{A}}[i] = {{ARRAY}}(v); }
