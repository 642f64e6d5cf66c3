// Per element of a window of the destination, the last point that writes it (scatter with duplicates).
@group(0) @binding({{BINDING}}) var<storage, read_write> win: array<atomic<u32>>;
