// Output J of a user elementwise kernel.
@group(0) @binding({{BINDING}}) var<storage, read_write> _out{{J}}: array<{{ELEM}}>;
