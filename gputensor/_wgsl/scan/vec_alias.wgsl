// vec_t: four accumulators as a WGSL vector.
alias vec_t = vec4<acc_t>;
