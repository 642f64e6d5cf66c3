// ld{{A}}(i): element i of slot A as COMPUTE (LOAD: the dtype table's load).
fn ld{{A}}(i: u32) -> {{COMPUTE}} { return {{LOAD}}; }
