// The parameter words of a fused prologue (WORDS vec4s), a member of Params.
    ext: array<vec4<u32>, {{WORDS}}>,
