// combine4's value for vec_t a struct: combine lane by lane.
vec_t(combine(a.x, b.x), combine(a.y, b.y), combine(a.z, b.z), combine(a.w, b.w))
