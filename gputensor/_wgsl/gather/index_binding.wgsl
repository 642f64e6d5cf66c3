// Index binding ix{{K}} of the gather kernel.
@group(0) @binding({{BINDING}}) var<storage, read> ix{{K}}: array<u32>;
