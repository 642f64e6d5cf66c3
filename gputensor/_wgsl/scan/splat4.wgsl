// splat4's value for vec_t a struct.
vec_t(x, x, x, x)
