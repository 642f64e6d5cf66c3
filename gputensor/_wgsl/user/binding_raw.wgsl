// Raw input R of a user elementwise kernel (indexed by the user's code).
@group(0) @binding({{BINDING}}) var<storage, read> _raw{{R}}: array<{{ELEM}}>;
