// The mixed vector mode: n counts groups.
    if (t >= n) { return; }
