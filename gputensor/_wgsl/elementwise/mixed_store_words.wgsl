// The mixed vector mode, packed output: the group as one vec4<u32> of whole words (WORDS).
    out[{{BASE}} + t] = vec4<u32>(
        {{WORDS}});
