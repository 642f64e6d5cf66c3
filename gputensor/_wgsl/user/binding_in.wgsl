// Array input S of a user elementwise kernel.
@group(0) @binding({{BINDING}}) var<storage, read> _in{{S}}: array<{{ELEM}}>;
