// splat4's value for vec_t a vector.
vec_t(x)
