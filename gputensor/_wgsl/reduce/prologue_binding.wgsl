// Input SLOT of a fused prologue.
@group(0) @binding({{BINDING}}) var<storage, read> leaf{{SLOT}}: array<{{ARRAY}}>;
