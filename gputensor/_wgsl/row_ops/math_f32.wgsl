// row_exp and row_log of the f32 row kernels.
fn row_exp(x: f32) -> f32 { return exp(x); }
fn row_log(x: f32) -> f32 { return log_f32(x); }
