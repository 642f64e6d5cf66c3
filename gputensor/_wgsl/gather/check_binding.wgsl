// The flag words of the index checks (reserve_index_check).
@group(0) @binding({{BINDING}}) var<storage, read_write> checks: array<atomic<u32>>;
