// row_exp and row_log of the f64 row kernels (the f64 polynomials of f64math).
fn row_exp(x: f64) -> f64 { return exp_f64(x); }
fn row_log(x: f64) -> f64 { return log_f64(x); }
