// The packed vector mode: one vec4<u32> of whole words of every operand per invocation (LOADS:
// vector_load lines), the output's words WORDS built from the lanes' values.
    if (t >= n) { return; }
{{LOADS}}
    out[P({{OUT_WORD}}u) / {{WIDTH}}u + t] = vec4<u32>(
        {{WORDS}});
