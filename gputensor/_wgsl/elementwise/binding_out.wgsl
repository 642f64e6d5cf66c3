// The output of the elementwise kernel, bound as an array of ELEM.
@group(0) @binding({{BINDING}}) var<storage, read_write> out: array<{{ELEM}}>;
