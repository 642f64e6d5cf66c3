// The vector mode: invocations [0, n / WIDTH) take a vector each (LOADS: vector_load lines; VALUE
// the output vector), the next n % WIDTH one element each, the tail past the last whole vector, in
// the same dispatch (TAIL_OFFSETS: tail_offset lines; TAIL_VALUE: the element of output slot OUT).
    let nv = n / {{WIDTH}}u;
    if (t >= nv) {
        let e = nv * {{WIDTH}}u + (t - nv);
        if (e >= n) { return; }
{{TAIL_OFFSETS}}
        out[e{{OUT}} / {{WIDTH}}u][e{{OUT}} % {{WIDTH}}u] = {{TAIL_VALUE}};
        return;
    }
{{LOADS}}
    out[P({{OUT_WORD}}u) / {{WIDTH}}u + t] = {{VALUE}};
