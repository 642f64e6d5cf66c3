// Operand slot A of the row kernel, bound as an array of ELEM (ACCESS: read or read_write).
@group(0) @binding({{BINDING}}) var<storage, {{ACCESS}}> A{{A}}: array<{{ELEM}}>;
