// The mixed vector mode: the output vector VALUE stored at unit INDEX.
    out[{{INDEX}}] = {{VALUE}};
